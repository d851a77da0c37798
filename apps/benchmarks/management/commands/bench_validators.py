"""bench_validators: validations per second with the built-in, a Python and a script validator.

    python manage.py bench_validators [--validations 2000] [--script-validations 200]
        [--hosts 200] [--batch N]

Each validator kind gets a throwaway SQLite database and data area of its own (as
``bench_credit``, whose state and workunits it reuses): one project, one app with quorum 2,
``--hosts`` hosts, and workunits whose two results are reported with identical outputs,
need_validate set. The validator daemon's passes (``daemon_run("validator")``) are timed until
every workunit is validated, with credit granted as on a real server. The kinds:

* built-in: the bitwise validator;
* Python: ``apps.benchmarks.sample_validator`` (parses each output, compares the values);
* script: BOINC's script validator with two ``/bin/sh`` scripts (``init_script`` checks the
  file is not empty, ``compare_script`` runs ``cmp``): three processes per workunit (two
  inits, one comparison), which is what such a validator costs whatever its language.

The table gives workunits validated per second; every workunit must end with a canonical
result (the ``ok`` column).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.benchmarks.support import last_json, machine_description, run_manage, schema_create

KINDS = ("built-in", "python", "script")
INIT_SH = '#!/bin/sh\ntest -s "$1"\n'
COMPARE_SH = '#!/bin/sh\nexec cmp -s "$1" "$2"\n'


def _configure(app: Any, kind: str) -> None:
    """Set the app's validator for ``kind``; the scripts are written beside the data area."""
    if kind == "python":
        app.validator = "apps.benchmarks.sample_validator"
    elif kind == "script":
        bin_dir = app.project.data_dir / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name, text in (("init.sh", INIT_SH), ("compare.sh", COMPARE_SH)):
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        app.init_script = f"{bin_dir / 'init.sh'} files"
        app.compare_script = f"{bin_dir / 'compare.sh'} files files2"
    app.full_clean()
    app.save()


def run_role(*, kind: str, hosts: int, validations: int, batch: int, seed: int) -> dict[str, Any]:
    """In the throwaway database: the state, the workunits, the timed validator passes."""
    from apps.benchmarks.management.commands.bench_credit import (
        build_state,
        create_ready_workunits,
        validate_all,
    )
    from apps.work.models import Workunit

    rng = random.Random(seed)
    state = build_state(hosts=hosts, quorum=2, rng=rng)
    _configure(state.app, kind)
    create_ready_workunits(state, count=validations, quorum=2, rng=rng)
    validation = validate_all(state, batch=batch, expected=validations)
    canonical = Workunit.objects.filter(app=state.app, canonical_result__isnull=False).count()
    return {"kind": kind, "validations": validations, **validation, "canonical": canonical}


def run_kind(*, kind: str, hosts: int, validations: int, batch: int, seed: int) -> dict[str, Any]:
    token = f"{os.getpid()}_{random.randrange(1 << 30)}"
    work = Path(tempfile.mkdtemp(prefix="cobblestone-validators-"))
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "DEBUG": "false",  # no query log: it would be part of what is measured
        "SECRET_KEY": f"bench-validators-{token}",
        "LOG_LEVEL": "WARNING",
    }
    try:
        run_manage("bench_validators", ["--role", "schema"], env)
        args = [
            "--role", "run", "--kind", kind, "--hosts", str(hosts), "--validations", str(validations),
            "--batch", str(batch), "--seed", str(seed),
        ]  # fmt: skip
        return last_json(run_manage("bench_validators", args, env, timeout=4 * 3600, echo_stderr=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def format_report(rows: list[dict[str, Any]], hosts: int, batch: int) -> list[str]:
    lines = [f"{'validator':<10}{'WUs':>7}{'seconds':>10}{'WU/s':>9}{'passes':>8}{'errors':>8}  ok"]
    for f in rows:
        rate = f["validations"] / f["seconds"] if f["seconds"] else 0.0
        ok = "OK" if f["canonical"] == f["validations"] and not f["errors"] else "FAIL"
        lines.append(
            f"{f['kind']:<10}{f['validations']:>7}{f['seconds']:>10.2f}{rate:>9.1f}{f['passes']:>8}{f['errors']:>8}  {ok}"
        )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines.append(f"quorum 2, {hosts} hosts, SQLite, batch {batch}; load average {load}")
    lines.append(f"machine: {machine_description()}")
    return lines


def _role(opts: dict[str, Any], batch: int) -> dict[str, Any]:
    """A part run in the throwaway database's process: its schema, or one kind's run."""
    if opts["role"] == "schema":
        return {"schema": schema_create()}
    return run_role(
        kind=opts["kind"],
        hosts=opts["hosts"],
        validations=opts["validations"],
        batch=batch,
        seed=opts["seed"],
    )


class Command(BaseCommand):
    help = "Measure validations per second with the built-in, a Python and a script validator."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--validations", type=int, default=2000, help="workunits (built-in, Python)")
        parser.add_argument("--script-validations", type=int, default=200, help="workunits (script)")
        parser.add_argument("--hosts", type=int, default=200)
        parser.add_argument("--batch", type=int, default=0, help="workunits per pass (default: daemon's)")
        parser.add_argument("--kinds", default=",".join(KINDS), help="which validators, comma separated")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--role", choices=["schema", "run"], help="(internal)")
        parser.add_argument("--kind", choices=KINDS, help="(internal)")

    def handle(self, *args: Any, **opts: Any) -> None:
        batch = opts["batch"] or settings.COBBLESTONE_DAEMON_BATCH
        if opts["role"]:
            self.stdout.write(json.dumps(_role(opts, batch)))
            return
        kinds = [k.strip() for k in opts["kinds"].split(",") if k.strip()]
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown or not kinds:
            raise CommandError(f"--kinds takes {', '.join(KINDS)}")
        if min(opts["validations"], opts["script_validations"], opts["hosts"]) < 2:
            raise CommandError("--validations, --script-validations and --hosts must be at least 2")
        rows = []
        for kind in kinds:
            count = opts["script_validations"] if kind == "script" else opts["validations"]
            try:
                rows.append(
                    run_kind(
                        kind=kind, hosts=opts["hosts"], validations=count, batch=batch, seed=opts["seed"]
                    )
                )
            except RuntimeError as exc:
                raise CommandError(str(exc)) from exc
        for line in format_report(rows, opts["hosts"], batch):
            self.stdout.write(line)
