"""Helpers shared by the benchmark commands (bench_pipeline, bench_credit): a throwaway
database, its schema, and running a part of a benchmark in a ``manage.py`` subprocess.

A benchmark never touches the configured database: the orchestrating command makes a fresh
one (an SQLite file in a temporary directory, or a new PostgreSQL database on the server the
caller names, dropped at the end) and runs its parts in subprocesses whose DATABASE_URL
points there.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.apps import apps as django_apps
from django.conf import settings
from django.core.management import call_command

BASE_DIR = Path(settings.BASE_DIR)


def schema_create() -> str:
    """Create the schema: migrations if they cover the models, else straight from the models."""
    try:
        call_command("makemigrations", check=True, dry_run=True, verbosity=0)
        call_command("migrate", interactive=False, verbosity=0)
        return "migrations"
    except SystemExit:
        settings.MIGRATION_MODULES = {c.label: None for c in django_apps.get_app_configs()}
        call_command("migrate", run_syncdb=True, interactive=False, verbosity=0)
        return "models (migrations lag behind)"


def run_manage(
    command: str, args: list[str], env: dict[str, str], *, timeout: float = 300, echo_stderr: bool = False
) -> str:
    """``manage.py <command> <args>`` in a subprocess with ``env``; its stdout.

    ``echo_stderr`` lets the subprocess's progress lines through to this process's stderr
    instead of keeping them for the error message.
    """
    done = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), command, *args],
        env=env,
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=None if echo_stderr else subprocess.PIPE,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        detail = "(its output is above)" if echo_stderr else done.stderr[-4000:]
        raise RuntimeError(f"{command} {' '.join(args)} failed:\n{detail}")
    return done.stdout


def last_json(output: str) -> Any:
    """The JSON object a subprocess printed on its last line."""
    return json.loads(output.strip().splitlines()[-1])


def postmaster_pid(db_url: str) -> int | None:
    """The process id of the PostgreSQL server behind ``db_url``, if it runs on this machine."""
    import psycopg

    with psycopg.connect(db_url) as conn:  # the backend is read while it lives
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        try:
            _, rest = (Path("/proc") / str(row[0] if row else 0) / "stat").read_text().rsplit(")", 1)
        except OSError:  # a server on another machine
            return None
    return int(rest.split()[1])  # the backend's parent


def postgres_cpu_seconds(server: int | None = None) -> float:
    """CPU seconds used so far by this machine's PostgreSQL servers (Linux /proc), or only by
    the one whose postmaster is ``server``.

    The live processes' own time, plus what each server's postmaster has collected from its
    children that ended: so the count only grows, however many connections close meanwhile,
    unless another server stops; naming the server leaves the others out. A benchmark's own
    database is the only busy one while it runs; the server's other databases add their
    background work, if any.
    """
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            head, rest = (entry / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        if head.endswith("(postgres"):
            fields = rest.split()
            if server is None or int(entry.name) == server or int(fields[1]) == server:
                stats[int(entry.name)] = fields
    total = 0
    for fields in stats.values():
        total += int(fields[11]) + int(fields[12])  # utime, stime
        if int(fields[1]) not in stats:  # a postmaster: its ended children's utime, stime
            total += int(fields[13]) + int(fields[14])
    return total / tick


def machine_description() -> str:
    cpus = os.cpu_count() or 0
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{cpus} CPU(s) {model}, Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )
