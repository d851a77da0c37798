"""bench_scale: one project of a large, mostly dead shape, and what its pages and passes cost.

The orchestrating run makes a fresh PostgreSQL database on the server
COBBLESTONE_TEST_DATABASE_URL (or DATABASE_URL) names, dropped at the end, and runs three
parts in ``manage.py`` subprocesses pointed at it (``--role``):

* ``build``: the schema, then one project scaled by ``--scale`` (1.0: 4.5 M hosts, 1 % of them
  in contact during the last week; 1.4 M users, 3 % with recent credit; 50,000 teams; 5 M
  workunits and 10 M results created over two years in every state; credit, RAC and a month
  of daily credit history for the users with recent credit). Rows are made by the database
  itself, one ``INSERT … SELECT … FROM generate_series`` per table: nothing crosses the
  connection but the statement, which is the fastest way to fill a table short of COPY from
  a file (and COPY would need the rows made in Python first). Every column the statement
  does not name gets the model field's default, so the statements follow the models.
  One user owns ``min(10,000, results / 10)`` tasks, for ``results.php``.
* ``measure``: the volunteer pages, every admin changelist with a filter and a search and a
  change page, and the API's list endpoints, each requested ``--samples`` times through
  Django's test Client in this one process (no web server, no network: what the figures
  leave out is the WSGI server's own cost); p50, p95 and the first request's time; the
  process's peak resident memory at the end.
* ``passes``: one pass each of the periodic work that reads whole tables
  (boincproj.celery.DEFAULT_SCHEDULE): the feeder's normalization, update_stats, db_dump
  and db_purge; the process's peak memory.
* ``scheduler``: scheduler RPCs of simulated hosts against a small project of their own
  made in the big database, run three times: alone, while ``dump`` (db_dump in another
  process) runs, and in an empty database for comparison.
* bench_pipeline's embedded run (every daemon, in one process) in the big database and in
  an empty one.

``--keep`` leaves the database in place (its name is printed) for EXPLAIN runs, and
``--database NAME`` measures such a kept database again without building it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, models, transaction

from apps.benchmarks.management.commands.bench_pipeline import SLUG as PIPELINE_SLUG
from apps.benchmarks.stack import admin_sql, with_db
from apps.benchmarks.support import last_json, machine_description, run_manage, schema_create

SLUG = "scale"
# The default (scale 1.0) shape.
SHAPE = {"hosts": 4_500_000, "accounts": 1_400_000, "teams": 50_000, "workunits": 5_000_000}
HEAVY_TASKS = 10_000
DAY = 86400.0
# The scheduler runs' hosts: as many as bench_pipeline's default.
RPC_HOSTS = 8


def _sizes(scale: float) -> dict[str, int]:
    sizes = {name: max(int(count * scale), 10) for name, count in SHAPE.items()}
    sizes["results"] = 2 * sizes["workunits"]
    sizes["heavy"] = min(HEAVY_TASKS, sizes["results"] // 10)
    return sizes


# --- build --------------------------------------------------------------------------------


def _insert_series(model: type[models.Model], count: int, exprs: dict[str, str]) -> None:
    """INSERT ``count`` rows of ``model`` made by the database: ``g`` runs over 1..count and
    ``r`` is a random number in [0, 1) per row; ``exprs`` gives columns (by attribute name) as
    SQL, every other column gets its field's default."""
    quote = connection.ops.quote_name
    columns, values, params = [], [], []
    for field in model._meta.concrete_fields:
        columns.append(quote(field.column))
        if field.attname in exprs or field.primary_key:
            values.append(exprs.get(field.attname, "g"))  # the tables start empty
            continue
        default = field.get_default()
        if default is None:
            if not field.null:
                raise CommandError(f"{model.__name__}.{field.attname} needs an expression")
            values.append("NULL")
        else:
            values.append("%s")
            params.append(field.get_db_prep_save(default, connection))
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)}) "
        f"SELECT {', '.join(values)} FROM (SELECT g, random() AS r FROM generate_series(1, {int(count)}) g) s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        # Explicit ids leave the identity behind: later inserts must not collide.
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence(%s, 'id'), (SELECT max(id) FROM {quote(model._meta.db_table)}))",
            [model._meta.db_table],
        )


def _ago(days: str) -> str:
    """SQL for the time ``days`` (an SQL number) days before the build's start."""
    return f"(now() - ({days}) * interval '1 day')"


def build(scale: float) -> dict[str, Any]:
    from apps.applications.services import AppFileSpec, app_create, app_version_add
    from apps.core.db import analyze_tables
    from apps.hosts.models import Host, HostAppVersion
    from apps.projects.services import project_create
    from apps.volunteers.models import Account, CreditHistory, Team
    from apps.work.models import Result, Workunit

    schema = schema_create()
    sizes = _sizes(scale)
    started = time.monotonic()
    project = project_create(slug=SLUG, name="Scale benchmark", daily_result_quota=100_000).project
    app = app_create(project=project, name="scale", user_friendly_name="scale", delay_bound=7 * 86400)
    with tempfile.TemporaryDirectory() as scratch:
        worker = Path(scratch) / "scale_worker.sh"
        worker.write_text("#!/bin/sh\n")
        version = app_version_add(
            project=project, app_name="scale", version_num=100, platform_name="x86_64-pc-linux-gnu",
            files=[AppFileSpec(path=worker)],
        )  # fmt: skip
    pid, aid = project.pk, app.pk
    sizes["app_version"] = version.pk
    timings: dict[str, float] = {}

    def timed(name: str, step: Callable[[], None]) -> None:
        t0 = time.monotonic()
        step()
        timings[name] = time.monotonic() - t0

    filled = (Account, Team, Host, HostAppVersion, Workunit, Result, CreditHistory)
    with transaction.atomic(), _bulk_load([model._meta.db_table for model in filled], timed):
        _build_rows(pid, aid, sizes, timed)
    timings["commit"] = time.monotonic() - started - sum(timings.values())
    t0 = time.monotonic()
    analyze_tables(*filled)
    timings["analyze"] = time.monotonic() - t0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        size = cursor.fetchone()[0]
    return {
        "schema": schema, "sizes": sizes, "seconds": time.monotonic() - started, "steps": timings,
        "database_mb": size / 1e6,
    }  # fmt: skip


@contextmanager
def _bulk_load(tables: list[str], timed: Callable[[str, Callable[[], None]], None]) -> Iterator[None]:
    """Fill ``tables`` without their foreign keys and non-unique indexes, then make those
    again. Checked row by row, the foreign keys of 20 million rows took longer than the
    inserts themselves; one ADD CONSTRAINT checks a whole table in one join, and an index
    built once is sorted once instead of growing a row at a time."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'f' AND conrelid = ANY(%s::regclass[])",
            [tables],
        )
        keys = cursor.fetchall()
        cursor.execute(
            "SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index "
            "WHERE indrelid = ANY(%s::regclass[]) AND NOT indisunique AND NOT indisprimary",
            [tables],
        )
        indexes = cursor.fetchall()
        for table, name, _ in keys:
            cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        for name, _ in indexes:
            cursor.execute(f"DROP INDEX {name}")
        yield

        def again() -> None:
            for _, definition in indexes:
                cursor.execute(definition)

        def check() -> None:
            for table, name, definition in keys:
                cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')

        timed("indexes", again)
        timed("foreign keys", check)


def _build_rows(
    pid: int, aid: int, sizes: dict[str, int], timed: Callable[[str, Callable[[], None]], None]
) -> None:
    from apps.hosts.models import Host, HostAppVersion
    from apps.volunteers.models import Account, CreditHistory, Team
    from apps.work.domain.states import AssimilateState, FileDeleteState, Outcome, ServerState, ValidateState
    from apps.work.models import Result, Workunit

    n_acc, n_host, n_team, n_wu = sizes["accounts"], sizes["hosts"], sizes["teams"], sizes["workunits"]

    # Users: 3 % with recent credit (RAC > 0), 30 % with some credit, 20 % in a team; team i's
    # founder is user i (and a member).
    recent_user = "mod(g, 100) < 3"
    timed("accounts", lambda: _insert_series(Account, n_acc, {
        "id": "g", "project_id": str(pid), "name": "'user ' || g", "email_addr": "'u' || g || '@example.org'",
        "passwd_hash": "''", "authenticator": "md5('auth' || g)", "cross_project_id": "md5('cpid' || g)",
        "create_time": _ago("730 * r"),
        "team_id": f"CASE WHEN g <= {n_team} THEN g WHEN mod(g, 5) = 0 THEN 1 + mod(g, {n_team}) END",
        "total_credit": f"CASE WHEN {recent_user} OR mod(g, 10) < 3 THEN 1e6 * r * r ELSE 0 END",
        "expavg_credit": f"CASE WHEN {recent_user} THEN 5000 * r ELSE 0 END",
        "expavg_time": f"CASE WHEN {recent_user} THEN extract(epoch FROM now()) - {DAY} * r ELSE 0 END",
    }))  # fmt: skip
    timed("teams", lambda: _insert_series(Team, n_team, {
        "id": "g", "project_id": str(pid), "name": "'team ' || g", "founder_id": "g",
        "create_time": _ago("730 * r"), "total_credit": "1e7 * r * r * r",
        "expavg_credit": "CASE WHEN mod(g, 4) = 0 THEN 20000 * r ELSE 0 END",
        "expavg_time": f"extract(epoch FROM now()) - {DAY} * r",
    }))  # fmt: skip
    # Hosts: host g belongs to user 1 + (g - 1) mod users; 1 % in contact within the week,
    # the rest last seen up to two years ago; 40 % with credit.
    active = "mod(g, 100) = 0"
    timed("hosts", lambda: _insert_series(Host, n_host, {
        "id": "g", "project_id": str(pid), "account_id": f"1 + mod(g - 1, {n_acc})",
        "create_time": _ago("730 * r + 7"),
        "rpc_time": f"CASE WHEN {active} OR g = 1 THEN {_ago('7 * r')} ELSE {_ago('7 + 723 * r')} END",
        "host_cpid": "md5('host' || g)", "domain_name": "'host' || g", "platform_name": "'x86_64-pc-linux-gnu'",
        "os_name": "CASE WHEN mod(g, 3) = 0 THEN 'Microsoft Windows 10' ELSE 'Linux' END",
        "p_model": "'CPU model ' || mod(g, 50)", "p_ncpus": "1 + mod(g, 16)",
        "total_credit": "CASE WHEN mod(g, 10) < 4 THEN 1e5 * r * r ELSE 0 END",
        "expavg_credit": f"CASE WHEN {active} THEN 1000 * r ELSE 0 END",
        "expavg_time": f"CASE WHEN {active} THEN extract(epoch FROM now()) - {DAY} * r ELSE 0 END",
    }))  # fmt: skip
    n_active = max(n_host // 100, 1)
    timed("host app versions", lambda: _insert_series(HostAppVersion, n_active, {
        "host_id": "100 * g", "app_id": str(aid), "app_version_id": str(sizes["app_version"]), "pfc_n": "10 + 100 * r", "pfc_avg": "1 + r",
        "et_n": "10 + 100 * r", "et_avg": "1e-9 * (1 + r)", "turnaround_n": "10", "turnaround_avg": "3600 * (1 + r)",
    }))  # fmt: skip
    # Workunits over two years, oldest first; the last day's are unsent or in progress, older
    # ones done (assimilated, files deleted) except a few still waiting for validation.
    age = f"(730.0 * ({n_wu} - g) / {n_wu})"
    done = f"{age} >= 1"
    over, unsent, in_progress = int(ServerState.OVER), int(ServerState.UNSENT), int(ServerState.IN_PROGRESS)
    timed("workunits", lambda: _insert_series(Workunit, n_wu, {
        "id": "g", "project_id": str(pid), "app_id": str(aid), "name": "'scale_wu_' || g",
        "create_time": _ago(age), "min_quorum": "2", "target_nresults": "2", "max_error_results": "3",
        "max_total_results": "4", "max_success_results": "3",
        "canonical_result_id": f"CASE WHEN {done} AND mod(g, 50) <> 0 THEN 2 * g - 1 END",
        "canonical_credit": f"CASE WHEN {done} THEN 50 * r ELSE 0 END",
        "transition_time": f"CASE WHEN {done} THEN NULL ELSE now() + interval '7 days' END",
        "file_delete_state": f"CASE WHEN {done} AND mod(g, 50) <> 0 THEN {int(FileDeleteState.DONE)} ELSE 0 END",
        "assimilate_state": f"CASE WHEN {done} AND mod(g, 50) <> 0 THEN {int(AssimilateState.DONE)} ELSE 0 END",
    }))  # fmt: skip
    # Results 2w-1 and 2w of workunit w; the heavy user's host (host 1) holds the first ones.
    n_res, heavy = sizes["results"], sizes["heavy"]
    wu = "((g + 1) / 2)"
    r_age = f"(730.0 * ({n_wu} - {wu}) / {n_wu})"
    r_done = f"{r_age} >= 1"
    host = f"CASE WHEN g <= {heavy} THEN 1 ELSE 1 + mod(g * 13, {n_host}) END"
    # Outcomes of finished results: 85 % valid, 5 % client error, 5 % no reply, 3 % pending
    # validation, 2 % inconclusive.
    kind = "mod(g * 7, 100)"
    success, error, no_reply = int(Outcome.SUCCESS), int(Outcome.CLIENT_ERROR), int(Outcome.NO_REPLY)
    ok = f"({kind} < 85 OR {kind} >= 95)"
    timed("results", lambda: _insert_series(Result, n_res, {
        "id": "g", "project_id": str(pid), "app_id": str(aid), "workunit_id": wu, "name": f"'scale_wu_' || {wu} || '_' || mod(g + 1, 2)",
        "create_time": _ago(r_age), "host_id": host, "account_id": f"1 + mod(({host}) - 1, {n_acc})",
        "server_state": f"CASE WHEN {r_done} THEN {over} WHEN mod(g, 3) = 0 THEN {unsent} ELSE {in_progress} END",
        "outcome": f"CASE WHEN NOT {r_done} THEN 0 WHEN {ok} THEN {success} WHEN {kind} < 90 THEN {error} ELSE {no_reply} END",
        "validate_state": f"CASE WHEN NOT {r_done} OR NOT {ok} THEN 0 WHEN {kind} < 85 THEN {int(ValidateState.VALID)} "
                          f"WHEN {kind} < 98 THEN 0 ELSE {int(ValidateState.INCONCLUSIVE)} END",
        "client_state": f"CASE WHEN {r_done} THEN 5 ELSE 0 END",
        "sent_time": f"CASE WHEN {r_done} OR mod(g, 3) <> 0 THEN {_ago(r_age)} END",
        "report_deadline": f"CASE WHEN {r_done} OR mod(g, 3) <> 0 THEN {_ago(r_age + ' - 7')} END",
        "received_time": f"CASE WHEN {r_done} THEN {_ago(r_age + ' - 0.5')} END",
        "file_delete_state": f"CASE WHEN {r_done} THEN {int(FileDeleteState.DONE)} ELSE 0 END",
        "cpu_time": "3600 * r", "elapsed_time": "3700 * r", "stderr_out": "'<core_client_version>8.0</core_client_version>'",
        "granted_credit": f"CASE WHEN {r_done} AND {kind} < 85 THEN 50 * r ELSE 0 END",
        "claimed_credit": "50 * r",
    }))  # fmt: skip
    # A month of daily history for each user with recent credit.
    n_recent_users = n_acc // 100 * 3
    timed("credit history", lambda: _insert_series(CreditHistory, n_recent_users * 30, {
        "project_id": str(pid), "account_id": "1 + 100 * ((g - 1) / 30 / 3) + mod((g - 1) / 30, 3)",
        "day": "(current_date - mod(g - 1, 30))", "total_credit": "1e6 * r", "expavg_credit": "5000 * r",
    }))  # fmt: skip


# --- measure ------------------------------------------------------------------------------


def _pages(sizes: dict[str, int]) -> list[tuple[str, str, str]]:
    """(group, label, URL) of every page measured."""
    from apps.hosts.models import HostAppVersion
    from apps.work.models import Result

    s = f"/{SLUG}"
    per_page = 50  # the portal's pages

    def deep(rows: int) -> int:
        return max(rows // 2 // per_page, 1)  # a page half way down the list

    team = 1
    # A finished task of host 1 and its workunit: ids that db_purge (run by an earlier
    # measurement of a kept database) has not removed.
    result, workunit = Result.objects.filter(host_id=1, server_state=5).order_by("-id").values_list(
        "id", "workunit_id"
    ).first() or (0, 0)
    hav = HostAppVersion.objects.order_by("id").values_list("id", flat=True).first()
    volunteer = [
        ("home", f"{s}/"),
        ("top users by total", f"{s}/top_users.php?sort_by=total_credit"),
        ("top users by RAC", f"{s}/top_users.php"),
        ("top users by RAC, deep page", f"{s}/top_users.php?page={deep(sizes['accounts'])}"),
        (
            "top users by total, deep page",
            f"{s}/top_users.php?sort_by=total_credit&page={deep(sizes['accounts'])}",
        ),
        ("top hosts by total", f"{s}/top_hosts.php?sort_by=total_credit"),
        ("top hosts by RAC", f"{s}/top_hosts.php"),
        ("top hosts by RAC, deep page", f"{s}/top_hosts.php?page={deep(sizes['hosts'])}"),
        (
            "top hosts by total, deep page",
            f"{s}/top_hosts.php?sort_by=total_credit&page={deep(sizes['hosts'])}",
        ),
        ("top teams by total", f"{s}/top_teams.php?sort_by=total_credit"),
        ("top teams by RAC", f"{s}/top_teams.php"),
        ("top teams by RAC, deep page", f"{s}/top_teams.php?page={deep(sizes['teams'])}"),
        ("show_user.php", f"{s}/show_user.php?userid=1"),
        ("show_host_detail.php", f"{s}/show_host_detail.php?hostid=1"),
        ("team page", f"{s}/team_display.php?teamid={team}"),
        ("team page, members page 2", f"{s}/team_display.php?teamid={team}&page=2"),
        ("team members (XML)", f"{s}/team_members_list.php?teamid={team}"),
        # The heavy user's tasks all ran on host 1, whose list is public (a user's own list
        # needs that user's session).
        ("results.php, heavy host", f"{s}/results.php?hostid=1"),
        ("results.php, in progress", f"{s}/results.php?hostid=1&state=1"),
        ("results.php, valid", f"{s}/results.php?hostid=1&state=4"),
        ("results.php, errors", f"{s}/results.php?hostid=1&state=6"),
        ("results.php, deep page", f"{s}/results.php?hostid=1&page={deep(2 * sizes['heavy'])}"),
        ("result.php", f"{s}/result.php?resultid={result}"),
        ("workunit.php", f"{s}/workunit.php?wuid={workunit}"),
        ("server_status.php", f"{s}/server_status.php"),
    ]
    admin = []
    for model, filters, search, obj in (
        ("work/result", "server_state__exact=5&outcome__exact=3", "scale_wu_12", result),
        ("work/workunit", "assimilate_state__exact=2", "scale_wu_12", workunit),
        ("hosts/host", "os_name=Linux", "host12", 1),
        ("volunteers/account", "allow_beta_work__exact=0", "user 12", 1),
        ("volunteers/team", "type__exact=1", "team 12", 1),
        ("hosts/hostappversion", "scale_probation__exact=0", "100", hav),
    ):
        base = f"/admin/{model}/"
        admin += [
            (f"{model} list", base),
            (f"{model} list, page 50", f"{base}?p=50"),
            (f"{model} filtered", f"{base}?{filters}"),
            (f"{model} search", f"{base}?q={search.replace(' ', '+')}"),
            (f"{model} change", f"{base}{obj}/change/"),
        ]
    api = [
        (name, f"/api/v1/projects/{SLUG}/{name}/")
        for name in ("users", "hosts", "teams", "workunits", "results", "apps")
    ] + [("tasks of the heavy host", f"/api/v1/projects/{SLUG}/tasks/?hostid=1")]
    return (
        [("volunteer", label, url) for label, url in volunteer]
        + [("admin", label, url) for label, url in admin]
        + [("api", label, url) for label, url in api]
    )


def measure(samples: int, sizes: dict[str, int]) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    settings.ALLOWED_HOSTS = ["*"]
    admin = get_user_model().objects.filter(
        username="scale-admin"
    ).first() or get_user_model().objects.create_superuser("scale-admin", "admin@example.org", "x" * 20)
    client = Client()
    client.force_login(admin)
    rows = []
    for group, label, url in _pages(sizes):
        times, status = [], 0
        for _ in range(samples):
            t0 = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - t0)
            status = response.status_code
        rows.append({"group": group, "label": label, "url": url, "status": status, **_quantiles(times)})
    return {"pages": rows, "peak_mb": _peak_mb(), "server": _server_settings()}


def _server_settings() -> str:
    """The PostgreSQL settings that decide how much of the tables stays in memory."""
    shown = []
    with connection.cursor() as cursor:
        for name in (
            "server_version",
            "shared_buffers",
            "effective_cache_size",
            "work_mem",
            "random_page_cost",
        ):
            cursor.execute(f"SHOW {name}")
            shown.append(f"{name} {cursor.fetchone()[0]}")
    return ", ".join(shown)


def _quantiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"first_ms": times[0] * 1000, "p50_ms": statistics.median(ordered) * 1000, "p95_ms": p95 * 1000}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def passes() -> dict[str, Any]:
    from apps.core import clock
    from apps.credit.services import credit_normalize_project, credit_update_stats
    from apps.portal.stats_export import stats_export_write
    from apps.projects.models import Project
    from apps.work.services.purge import workunits_purge

    project = Project.objects.get(slug=SLUG)
    runs: list[tuple[str, Callable[[], Any]]] = [
        ("feeder normalization", lambda: credit_normalize_project(project=project)),
        ("update_stats", lambda: credit_update_stats(project=project, now=clock.now())),
        ("db_dump (whole export)", lambda: stats_export_write(project=project, now=clock.now())),
        ("db_purge (one batch)", lambda: workunits_purge(project=project, min_age_days=1)),
    ]
    rows = []
    for label, run in runs:
        t0 = time.perf_counter()
        run()
        rows.append({"label": label, "seconds": time.perf_counter() - t0})
    return {"passes": rows, "peak_mb": _peak_mb()}


def scheduler_rate(jobs: int, hosts: int, seconds: float) -> dict[str, Any]:
    """Scheduler RPCs against a project of their own made in this database: ``hosts`` of
    bench_pipeline's simulated hosts, in this process, one RPC each in turn, each reporting
    the tasks the last one brought (computed at once, outputs uploaded) and asking for a day
    of work, for ``seconds`` or until the ``jobs`` run out. Only the scheduler requests are
    timed (the uploads between them are not), and no daemon runs meanwhile: what grows with
    the tables is the RPCs' own reading and writing."""
    from apps.benchmarks.management.commands.bench_pipeline import (
        SimulatedHost,
        inprocess_post,
        pipeline_setup,
    )

    settings.ALLOWED_HOSTS = ["*"]
    slug = f"sched{os.getpid()}"  # a project per run, so runs in one database do not meet
    setup = pipeline_setup(jobs=jobs, hosts=hosts, slug=slug)
    post = inprocess_post()
    latencies: list[float] = []

    def timed_post(path: str, body: bytes) -> bytes:
        if not path.endswith("/cgi"):
            return post(path, body)
        t0 = time.perf_counter()
        try:
            return post(path, body)
        finally:
            latencies.append(time.perf_counter() - t0)

    sims = [
        SimulatedHost(key, timed_post, f"{slug}-host{i}", slug=slug)
        for i, key in enumerate(setup["authenticators"])
    ]
    for sim in sims:  # first contact makes the host rows
        sim.rpc()
    latencies.clear()
    sent = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        busy = False
        for sim in sims:
            reporting = bool(sim.to_report)
            got = sim.rpc()
            sent += got
            busy = busy or reporting or got > 0
        if not busy:
            break
    spent = sum(latencies)
    return {
        "hosts": hosts, "rpcs": len(latencies), "jobs": sent, "seconds": spent,
        "rpc_per_s": len(latencies) / spent, "jobs_per_s": sent / spent, **_quantiles(latencies),
    }  # fmt: skip


def dump() -> dict[str, Any]:
    """db_dump's whole statistics export, alone in its process."""
    from apps.core import clock
    from apps.portal.stats_export import stats_export_write
    from apps.projects.models import Project

    t0 = time.perf_counter()
    stats_export_write(project=Project.objects.get(slug=SLUG), now=clock.now())
    return {"seconds": time.perf_counter() - t0, "peak_mb": _peak_mb()}


# --- orchestration ------------------------------------------------------------------------


class Command(BaseCommand):
    help = "Build one large project in a fresh PostgreSQL database and time its pages and passes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scale", type=float, default=1.0, help="Fraction of the default shape")
        parser.add_argument("--samples", type=int, default=20, help="Requests per page")
        parser.add_argument("--keep", action="store_true", help="Leave the database in place")
        parser.add_argument(
            "--database", default="", help="Measure this database (built earlier at the same --scale) instead"
        )
        parser.add_argument(
            "--rpc-seconds", type=float, default=30.0, help="Seconds of scheduler RPCs per run"
        )
        parser.add_argument(
            "--rpc-jobs", type=int, default=20_000, help="Jobs made for each run of scheduler RPCs"
        )
        parser.add_argument(
            "--pipeline-jobs", type=int, default=10_000, help="Workunits of the bench_pipeline runs"
        )
        parser.add_argument(
            "--role", choices=["build", "measure", "passes", "scheduler", "dump"], help=argparse_hidden()
        )
        parser.add_argument("--sizes", default="{}", help=argparse_hidden())

    def handle(self, *args: Any, **options: Any) -> None:
        role = options["role"]
        if role == "build":
            self.stdout.write(json.dumps(build(options["scale"])))
        elif role == "measure":
            self.stdout.write(json.dumps(measure(options["samples"], json.loads(options["sizes"]))))
        elif role == "passes":
            self.stdout.write(json.dumps(passes()))
        elif role == "scheduler":
            self.stdout.write(
                json.dumps(scheduler_rate(options["rpc_jobs"], RPC_HOSTS, options["rpc_seconds"]))
            )
        elif role == "dump":
            self.stdout.write(json.dumps(dump()))
        else:
            self._orchestrate(options)

    def _orchestrate(self, options: dict[str, Any]) -> None:
        scale, keep, reuse = options["scale"], options["keep"], options["database"]
        pg_url = os.environ.get("COBBLESTONE_TEST_DATABASE_URL") or os.environ.get("DATABASE_URL", "")
        if not pg_url.startswith("postgres"):
            raise CommandError("bench_scale needs PostgreSQL: set COBBLESTONE_TEST_DATABASE_URL")
        db_name = reuse or _fresh_name("scale")
        work = Path(tempfile.mkdtemp(prefix="cobblestone-scale-"))
        env = _env(pg_url, db_name, work / "big")
        rpc = [
            "--role",
            "scheduler",
            "--rpc-seconds",
            str(options["rpc_seconds"]),
            "--rpc-jobs",
            str(options["rpc_jobs"]),
        ]
        pipeline = ["--role", "embedded", "--jobs", str(options["pipeline_jobs"]), "--hosts", "8"]
        if not reuse:
            admin_sql(pg_url, f'CREATE DATABASE "{db_name}"')
        try:
            if reuse:
                built: dict[str, Any] = {"reused": db_name, "sizes": _sizes(scale)}
            else:
                self.stderr.write(f"database {db_name}: building at scale {scale}")
                built = last_json(
                    run_manage(
                        "bench_scale", ["--role", "build", "--scale", str(scale)], env, timeout=4 * 3600
                    )
                )
                self.stderr.write(f"built in {built['seconds']:.0f} s")
            self.stderr.write("measuring pages")
            measured = last_json(run_manage(
                "bench_scale",
                ["--role", "measure", "--samples", str(options["samples"]), "--sizes", json.dumps(built["sizes"])],
                env, timeout=4 * 3600,
            ))  # fmt: skip
            self.stderr.write("periodic passes")
            ran = last_json(run_manage("bench_scale", ["--role", "passes"], env, timeout=4 * 3600))
            self.stderr.write("scheduler RPCs")
            rates = {"big": last_json(run_manage("bench_scale", rpc, env, timeout=3600))}
            self.stderr.write("db_dump, and scheduler RPCs while it runs")
            rates["during_dump"], ran["dump_beside_rpcs"] = self._beside_dump(env, rpc)
            self.stderr.write("bench_pipeline in this database")
            if _has_project(env, PIPELINE_SLUG):
                raise CommandError(f"{db_name} holds a bench_pipeline project already: measure a fresh build")
            flows = {"big": last_json(run_manage("bench_pipeline", pipeline, env, timeout=4 * 3600))}
            self.stderr.write("the same in an empty database")
            rates["empty"], flows["empty"] = self._empty_database(pg_url, work, rpc, pipeline)
            self._table(scale, options["samples"], built, measured, ran, rates, flows)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            if keep or reuse:
                self.stderr.write(f"kept database {db_name}")
            else:
                admin_sql(pg_url, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')

    def _beside_dump(self, env: dict[str, str], rpc: list[str]) -> tuple[dict[str, Any], float]:
        """Scheduler RPCs in one process while db_dump runs in another; db_dump's time."""
        dumping = subprocess.Popen(
            [sys.executable, "manage.py", "bench_scale", "--role", "dump"],
            env=env, cwd=settings.BASE_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            rates = last_json(run_manage("bench_scale", rpc, env, timeout=3600))
            out, err = dumping.communicate(timeout=4 * 3600)
        finally:
            if dumping.poll() is None:
                dumping.kill()
        if dumping.returncode != 0:
            raise CommandError(f"db_dump failed: {err[-4000:]}")
        return rates, float(last_json(out)["seconds"])

    def _empty_database(
        self, pg_url: str, work: Path, rpc: list[str], pipeline: list[str]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The scheduler and pipeline runs in a database holding nothing but the schema."""
        name = _fresh_name("scale_empty")
        env = _env(pg_url, name, work / "empty")
        admin_sql(pg_url, f'CREATE DATABASE "{name}"')
        try:
            run_manage("migrate", ["--no-input", "-v", "0"], env, timeout=3600)
            rates = last_json(run_manage("bench_scale", rpc, env, timeout=3600))
            flow = last_json(run_manage("bench_pipeline", pipeline, env, timeout=4 * 3600))
        finally:
            admin_sql(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        return rates, flow

    def _table(
        self,
        scale: float,
        samples: int,
        built: dict[str, Any],
        measured: dict[str, Any],
        ran: dict[str, Any],
        rates: dict[str, dict[str, Any]],
        flows: dict[str, dict[str, Any]],
    ) -> None:
        out = self.stdout.write
        sizes = built["sizes"]
        out(f"bench_scale --scale {scale}: {machine_description()}")
        shape = (
            f"{sizes['hosts']:,} hosts, {sizes['accounts']:,} users, {sizes['teams']:,} teams, "
            f"{sizes['workunits']:,} workunits, {sizes['results']:,} results (heavy user: {sizes['heavy']:,} tasks)"
        )
        if "reused" in built:
            out(f"{shape}; database {built['reused']}, built earlier")
        else:
            out(
                f"{shape}; schema from {built['schema']}; built in {built['seconds']:.1f} s, {built['database_mb']:.0f} MB"
            )
            out("  build steps: " + ", ".join(f"{k} {v:.1f} s" for k, v in built["steps"].items()))
        out(f"PostgreSQL: {measured['server']}")
        out(
            f"{'page':<44} {'status':>6} {'first ms':>9} {'p50 ms':>8} {'p95 ms':>8}   ({samples} requests each)"
        )
        group = ""
        for row in measured["pages"]:
            if row["group"] != group:
                group = row["group"]
                out(f"-- {group}")
            out(
                f"{row['label']:<44} {row['status']:>6} {row['first_ms']:>9.1f} {row['p50_ms']:>8.1f} {row['p95_ms']:>8.1f}"
            )
        out("-- periodic passes")
        for row in ran["passes"]:
            out(f"{row['label']:<44} {row['seconds']:>9.2f} s")
        out(f"{'db_dump beside the scheduler RPCs below':<44} {ran['dump_beside_rpcs']:>9.2f} s")
        out(
            f"-- scheduler RPCs ({RPC_HOSTS} simulated hosts, one process; per second of RPC time)   RPC/s  jobs/s  p50 ms  p95 ms"
        )
        for key, label in (
            ("empty", "empty database"),
            ("big", "this database"),
            ("during_dump", "this database, db_dump running"),
        ):
            r = rates[key]
            change = (
                "" if key == "empty" else f"  {_change(r['jobs_per_s'], rates['empty']['jobs_per_s'])} jobs/s"
            )
            out(
                f"{label:<44} {r['rpc_per_s']:>7.1f} {r['jobs_per_s']:>7.1f} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f}{change}"
            )
        out(f"-- bench_pipeline, embedded, {flows['big']['jobs']:,} workunits   WU/s")
        for key, label in (("empty", "empty database"), ("big", "this database")):
            f = flows[key]
            change = "" if key == "empty" else f"  {_change(f['rate'], flows['empty']['rate'])}"
            out(f"{label:<44} {f['rate']:>7.1f}{change}")
        out(f"peak memory: web process (Django test Client, in-process) {measured['peak_mb']:.0f} MB, "
            f"passes process {ran['peak_mb']:.0f} MB")  # fmt: skip


def _change(value: float, base: float) -> str:
    return f"{(value / base - 1) * 100:+.0f} %" if base else "n/a"


def _fresh_name(kind: str) -> str:
    return f"cobblestone_{kind}_{os.getpid()}_{random.randrange(1 << 30)}"


def _env(pg_url: str, db_name: str, work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": with_db(pg_url, db_name),
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "DEBUG": "false",
        "SECRET_KEY": "bench-scale",
        "LOG_LEVEL": "WARNING",
    }


def _has_project(env: dict[str, str], slug: str) -> bool:
    script = (
        f"from apps.projects.models import Project; print(Project.objects.filter(slug={slug!r}).exists())"
    )
    return run_manage("shell", ["-c", script], env).strip().endswith("True")


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS
