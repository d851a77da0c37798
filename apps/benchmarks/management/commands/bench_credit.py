"""bench_credit: what credit granting (CreditNew) costs the server, on a realistic credit state.

    python manage.py bench_credit [--hosts 10000] [--validations 10000] [--quorum 1|2]
        [--feeder-passes 5] [--batch N] [--database auto|sqlite|postgres] [--database-url URL]

Every run uses a throwaway database and data area (apps.benchmarks.support), never the
configured ones: an SQLite file in a temporary directory, or, when ``--database-url`` or
COBBLESTONE_TEST_DATABASE_URL names a PostgreSQL server, a fresh database there, dropped
at the end. ``--database sqlite`` ignores the server. The steps:

1. Schema: ``migrate`` in a subprocess (from the models if the migrations lag behind; the
   output says which).
2. In a second subprocess against that database (``--role run``), the state, built with
   bulk_create: one project, one app with a CPU, an ``mt`` and a ``cuda`` version whose pfc
   averages are above the sample threshold, the hosts (a third with a GPU) with a
   host_app_version per usable version (varied pfc and elapsed-time averages; a few still
   below the threshold or on probation), about one account per two hosts, a few teams.
3. The main feeder's normalization (``credit_normalize_project``), timed ``--feeder-passes``
   times; before each pass the versions' averages move a little, as validators move them.
4. ``--validations`` workunits ready for validation, by bulk operations: ``--quorum``
   SUCCESS results each on distinct random hosts, flops_estimate as the scheduler's
   ``peak_flops``, elapsed times drawn from the hosts' efficiencies, identical outputs
   written to the upload area and marked uploaded, need_validate set.
5. The validator daemon's passes (``daemon_run("validator")``, ``--batch`` workunits each,
   COBBLESTONE_DAEMON_BATCH by default), timed until every workunit is validated.
6. Checks: every workunit has a canonical result, every result is valid with granted
   credit > 0, and each account's, team's and host's total credit equals the sum of the
   credit granted to its results.

The orchestrating process prints a table and the consistency line (OK or FAIL).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.benchmarks.stack import admin_sql, with_db
from apps.benchmarks.support import last_json, run_manage, schema_create

SLUG = "bench-credit"
APP = "credit"
PLATFORM = "x86_64-pc-linux-gnu"
VERSION_NUM = 100
# Plan class -> the version's pfc average (1 / efficiency: the GPU is the least efficient).
VERSION_PFC = {"": 2.0, "mt": 2.6, "cuda": 12.0}
VERSION_SAMPLES = 50_000.0  # far above the sample threshold (100)
GPU_HOST_SHARE = 0.3
TEAMS = 5


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


# --- the part run with --role run, in a process whose DATABASE_URL is the throwaway database --


@dataclass(slots=True)
class HostPlan:
    """A host as the benchmark sees it: its ids, speeds and its versions' true pfc."""

    id: int
    account_id: int
    ncpus: int
    p_fpops: float
    gpu_flops: float
    pfc: dict[int, float] = field(default_factory=dict)  # app version id -> true pfc (1/efficiency)


@dataclass(slots=True)
class CreditState:
    project: Any
    app: Any
    versions: dict[int, Any]
    hosts: list[HostPlan]
    accounts: int
    teams: int
    havs: int


def build_state(*, hosts: int, quorum: int, rng: random.Random) -> CreditState:
    """Project, app, three versions, hosts with their host_app_versions, accounts, teams."""
    from apps.applications.models import AppVersion
    from apps.applications.services import AppFileSpec, app_create, app_version_add
    from apps.core import clock
    from apps.hosts.models import Host, HostAppVersion, HostCoproc
    from apps.projects.services import project_create
    from apps.volunteers.models import Account, Team, make_passwd_hash

    now = clock.now().timestamp()
    project = project_create(slug=SLUG, name="Credit bench").project
    app = app_create(project=project, name=APP, min_quorum=quorum, target_nresults=quorum)
    worker = project.data_dir / "worker.sh"
    worker.write_text("#!/bin/sh\necho done\n")
    versions: dict[int, AppVersion] = {}
    for plan_class, pfc in VERSION_PFC.items():
        version = app_version_add(
            project=project,
            app_name=APP,
            version_num=VERSION_NUM,
            platform_name=PLATFORM,
            files=[AppFileSpec(path=worker)],
            plan_class=plan_class,
        )
        version.pfc_n, version.pfc_avg = VERSION_SAMPLES, pfc
        version.save(update_fields=["pfc_n", "pfc_avg"])
        versions[version.pk] = version

    team_rows = Team.objects.bulk_create(
        Team(project=project, name=f"Team {i}") for i in range(min(TEAMS, max(1, hosts // 10)))
    )
    n_accounts = max(1, (hosts + 1) // 2)
    accounts = Account.objects.bulk_create(
        (
            Account(
                project=project,
                name=f"volunteer{i}",
                email_addr=f"volunteer{i}@bench.example.com",
                passwd_hash=make_passwd_hash(None),
                team=rng.choice(team_rows) if rng.random() < 0.6 else None,
            )
            for i in range(n_accounts)
        ),
        batch_size=1000,
    )
    host_rows = []
    for i in range(hosts):
        ncpus = rng.choice((2, 4, 4, 8, 8, 16))
        host_rows.append(
            Host(
                project=project,
                account=accounts[i % n_accounts],
                domain_name=f"host{i}",
                host_cpid=hashlib.md5(f"host{i}".encode()).hexdigest(),
                platform_name=PLATFORM,
                p_ncpus=ncpus,
                p_fpops=rng.lognormvariate(math.log(4e9), 0.3),
                p_iops=4e9,
                m_nbytes=16e9,
                os_name="Linux",
            )
        )
    host_rows = Host.objects.bulk_create(host_rows, batch_size=1000)
    by_plan = {v.plan_class: v for v in versions.values()}
    plans: list[HostPlan] = []
    coprocs: list[Any] = []
    havs: list[Any] = []
    for row in host_rows:
        gpu_flops = rng.lognormvariate(math.log(5e12), 0.5) if rng.random() < GPU_HOST_SHARE else 0.0
        plan = HostPlan(row.pk, row.account_id, row.p_ncpus, row.p_fpops, gpu_flops)
        if gpu_flops:
            coprocs.append(
                HostCoproc(host_id=row.pk, proc_type="NVIDIA", name="GeForce", count=1, peak_flops=gpu_flops)
            )
        usable = ["", "mt", "cuda"] if gpu_flops else ["", "mt"]
        for plan_class in usable:
            version = by_plan[plan_class]
            true_pfc = VERSION_PFC[plan_class] * min(3.0, max(0.33, rng.lognormvariate(0, 0.35)))
            plan.pfc[version.pk] = true_pfc
            new = rng.random() < 0.05  # a host new to this version: below the threshold, on probation
            n = float(rng.randint(0, 9) if new else rng.randint(10, 400))
            et_avg = true_pfc / _peak(plan, version)  # elapsed / fpops_est
            havs.append(
                HostAppVersion(
                    host_id=row.pk,
                    app=app,
                    app_version=version,
                    pfc_n=n,
                    pfc_avg=true_pfc * rng.uniform(0.9, 1.1) if n else 0.0,
                    et_n=n,
                    et_avg=et_avg * rng.uniform(0.9, 1.1) if n else 0.0,
                    et_var=(0.15 * et_avg) ** 2 if n else 0.0,
                    et_q=(0.15 * et_avg) ** 2 * min(n, 10),
                    turnaround_n=n,
                    turnaround_avg=rng.uniform(3_600, 4 * 86_400) if n else 0.0,
                    scale_probation=new,
                    host_scale_time=now + app.delay_bound if new else now - 30 * 86_400,
                    error_rate=rng.uniform(0.0, 0.05),
                    consecutive_valid=0 if new else int(n),
                )
            )
        plans.append(plan)
    HostCoproc.objects.bulk_create(coprocs, batch_size=1000)
    HostAppVersion.objects.bulk_create(havs, batch_size=1000)
    return CreditState(project, app, versions, plans, len(accounts), len(team_rows), len(havs))


def _peak(host: HostPlan, version: Any) -> float:
    """result.flops_estimate as the scheduler computes it at dispatch (apps.credit.domain.peak)."""
    from apps.core.domain.resources import ProcType
    from apps.credit.domain.peak import ResourceUsage, peak_flops

    if version.is_gpu:
        usage = ResourceUsage(
            avg_ncpus=version.avg_ncpus, gpu_type=ProcType.NVIDIA, gpu_usage=version.gpu_usage
        )
        return peak_flops(usage, p_fpops=host.p_fpops, gpu_peak_flops=host.gpu_flops)
    ncpus = host.ncpus if version.multi_thread else version.avg_ncpus
    return peak_flops(ResourceUsage(avg_ncpus=ncpus), p_fpops=host.p_fpops)


def time_feeder(state: CreditState, passes: int) -> tuple[list[float], list[int]]:
    """Seconds and rows changed of each feeder pass; the averages move a little between passes."""
    from django.db.models import F

    from apps.applications.models import AppVersion
    from apps.credit.services import credit_normalize_project

    seconds, changed = [], []
    for i in range(passes):
        for k, version_id in enumerate(state.versions if i else ()):
            # The validators moved the versions' averages since the last pass (not timed).
            AppVersion.objects.filter(id=version_id).update(pfc_avg=F("pfc_avg") * (1 + 1e-4 * (k + 1)))
        t0 = time.perf_counter()
        outcome = credit_normalize_project(project=state.project)
        seconds.append(time.perf_counter() - t0)
        changed.append(outcome.items)
    return seconds, changed


def create_ready_workunits(state: CreditState, *, count: int, quorum: int, rng: random.Random) -> int:
    """``count`` workunits whose ``quorum`` results are reported and uploaded; returns results made."""
    from django.db import transaction

    from apps.core import clock
    from apps.work.models import OutputFile, Result, Workunit
    from apps.work.services.create import DEFAULT_OUTPUTS

    if quorum > len(state.hosts):
        raise CommandError(f"quorum {quorum} needs at least {quorum} hosts")
    now = clock.now()
    project, app = state.project, state.app
    outputs = [asdict(spec) for spec in DEFAULT_OUTPUTS]
    upload_dir: Path = project.upload_dir
    upload_dir.mkdir(parents=True, exist_ok=True)
    made = 0
    for start in range(0, count, 1000):
        with transaction.atomic():
            wus = []
            for i in range(start, min(count, start + 1000)):
                est = rng.lognormvariate(math.log(3.6e12), 0.5)
                wus.append(
                    Workunit(
                        project=project,
                        app=app,
                        name=f"credit_{i:06d}",
                        rsc_fpops_est=est,
                        rsc_fpops_bound=24 * est,  # BOINC's default bound / estimate
                        delay_bound=app.delay_bound,
                        min_quorum=quorum,
                        target_nresults=quorum,
                        max_error_results=app.max_error_results,
                        max_total_results=max(app.max_total_results, quorum),
                        max_success_results=app.max_success_results,
                        need_validate=True,
                        transition_time=now + timedelta(seconds=app.delay_bound),
                        output_files=outputs,
                    )
                )
            wus = Workunit.objects.bulk_create(wus)
            results, payloads = [], {}
            for wu in wus:
                payloads[wu.pk] = f"{wu.name} {rng.getrandbits(64):016x}\n".encode()
                for k, host in enumerate(rng.sample(state.hosts, quorum)):
                    results.append(_reported_result(state, wu, host, k, now, rng))
            results = Result.objects.bulk_create(results)
            files = []
            for r in results:
                data = payloads[r.workunit_id]
                name = f"{r.name}_0"
                (upload_dir / name).write_bytes(data)
                files.append(
                    OutputFile(
                        result_id=r.pk,
                        name=name,
                        open_name="out",
                        ordinal=0,
                        nbytes=len(data),
                        md5_cksum=hashlib.md5(data).hexdigest(),
                        uploaded=True,
                        upload_time=r.received_time,
                    )
                )
            OutputFile.objects.bulk_create(files)
            made += len(results)
    return made


def _reported_result(
    state: CreditState, wu: Any, host: HostPlan, k: int, now: datetime, rng: random.Random
) -> Any:
    from apps.work.domain.states import ClientState, Outcome, ServerState
    from apps.work.models import Result

    version = state.versions[rng.choice(list(host.pfc))]
    flops = _peak(host, version)
    elapsed = wu.rsc_fpops_est * host.pfc[version.pk] / flops * rng.lognormvariate(0, 0.1)
    received = now - timedelta(seconds=rng.uniform(60, 3_600))
    sent = received - timedelta(seconds=elapsed + rng.uniform(600, 2 * 86_400))
    ncpus = host.ncpus if version.multi_thread else version.avg_ncpus
    return Result(
        project_id=wu.project_id,
        app_id=wu.app_id,
        workunit_id=wu.pk,
        name=f"{wu.name}_{k}",
        server_state=ServerState.OVER,
        outcome=Outcome.SUCCESS,
        client_state=ClientState.FILES_UPLOADED,
        host_id=host.id,
        account_id=host.account_id,
        app_version=version,
        platform=PLATFORM,
        version_num=version.version_num,
        plan_class=version.plan_class,
        proc_type=version.proc_type,
        avg_ncpus=ncpus,
        gpu_usage=version.gpu_usage,
        flops_estimate=flops,
        sent_time=sent,
        report_deadline=sent + timedelta(seconds=wu.delay_bound),
        received_time=received,
        elapsed_time=elapsed,
        cpu_time=elapsed * (ncpus if not version.is_gpu else 0.1) * 0.95,
        exit_status=0,
    )


def validate_all(state: CreditState, *, batch: int, expected: int) -> dict[str, Any]:
    """The validator daemon's passes until no workunit needs validation; timed."""
    from apps.work.models import Workunit
    from apps.work.services.daemons import PassOptions, daemon_run

    pending = Workunit.objects.filter(app=state.app, need_validate=True)
    passes = errors = validated = 0
    t0 = time.perf_counter()
    while pending.exists():
        outcome = daemon_run("validator", slug=SLUG, options=PassOptions(limit=batch))
        passes += 1
        errors += outcome.errors
        validated += outcome.items
        elapsed = time.perf_counter() - t0
        _log(f"validator pass {passes}: {validated}/{expected} validated, {validated / elapsed:.0f}/s")
        if not outcome.items:
            break  # no progress: the checks say what is left
    return {"seconds": time.perf_counter() - t0, "passes": passes, "errors": errors, "validated": validated}


def credit_checks(state: CreditState) -> dict[str, Any]:
    """Every workunit validated, every result credited, totals equal the granted credit."""
    from django.db.models import Sum

    from apps.hosts.models import Host
    from apps.volunteers.models import Account, Team
    from apps.work.domain.states import ValidateState
    from apps.work.models import Result, Workunit

    results = Result.objects.filter(app=state.app)

    def mismatches(totals: dict[int, float], granted: dict[int, float]) -> int:
        return sum(
            1 for pk, total in totals.items() if not math.isclose(total, granted.get(pk, 0.0), rel_tol=1e-9)
        )

    by_account = dict(results.values_list("account_id").annotate(s=Sum("granted_credit")))
    by_host = dict(results.values_list("host_id").annotate(s=Sum("granted_credit")))
    by_team = dict(
        results.filter(account__team__isnull=False)
        .values_list("account__team_id")
        .annotate(s=Sum("granted_credit"))
    )
    accounts = dict(Account.objects.filter(project=state.project).values_list("id", "total_credit"))
    hosts = dict(Host.objects.filter(project=state.project).values_list("id", "total_credit"))
    teams = dict(Team.objects.filter(project=state.project).values_list("id", "total_credit"))
    granted = float(results.aggregate(s=Sum("granted_credit"))["s"] or 0.0)
    checks = {
        "workunits_not_validated": Workunit.objects.filter(
            app=state.app, canonical_result__isnull=True
        ).count(),
        "results": results.count(),
        "results_not_valid": results.exclude(validate_state=ValidateState.VALID).count(),
        "results_without_credit": results.exclude(granted_credit__gt=0).count(),
        "granted_total": granted,
        "users_total": float(sum(accounts.values())),
        "accounts_mismatched": mismatches(accounts, by_account),
        "teams_mismatched": mismatches(teams, by_team),
        "hosts_mismatched": mismatches(hosts, by_host),
    }
    checks["ok"] = bool(
        checks["results"]
        and not checks["workunits_not_validated"]
        and not checks["results_not_valid"]
        and not checks["results_without_credit"]
        and not checks["accounts_mismatched"]
        and not checks["teams_mismatched"]
        and not checks["hosts_mismatched"]
        and math.isclose(checks["users_total"], granted, rel_tol=1e-9)
    )
    return checks


def run_role(
    *, hosts: int, validations: int, quorum: int, feeder_passes: int, batch: int, seed: int
) -> dict[str, Any]:
    """Steps 2 to 6 of the module doc, in this process; the figures as a dict."""
    from django.db import connection

    rng = random.Random(seed)
    t0 = time.perf_counter()
    state = build_state(hosts=hosts, quorum=quorum, rng=rng)
    build_seconds = time.perf_counter() - t0
    _log(
        f"state: {hosts} hosts, {state.havs} host_app_versions, {state.accounts} accounts in {build_seconds:.1f}s"
    )
    feeder_seconds, feeder_rows = time_feeder(state, feeder_passes)
    t0 = time.perf_counter()
    results = create_ready_workunits(state, count=validations, quorum=quorum, rng=rng)
    create_seconds = time.perf_counter() - t0
    _log(f"{validations} workunits with {results} results ready for validation in {create_seconds:.1f}s")
    validation = validate_all(state, batch=batch, expected=validations)
    return {
        "database": "PostgreSQL" if connection.vendor == "postgresql" else "SQLite",
        "hosts": hosts,
        "havs": state.havs,
        "accounts": state.accounts,
        "teams": state.teams,
        "quorum": quorum,
        "build_seconds": build_seconds,
        "feeder_seconds": feeder_seconds,
        "feeder_rows": feeder_rows,
        "validations": validations,
        "results": results,
        "create_seconds": create_seconds,
        "batch": batch,
        "validation": validation,
        "checks": credit_checks(state),
    }


# --- the orchestrating side -------------------------------------------------------------------


def run_benchmark(
    *,
    hosts: int,
    validations: int,
    quorum: int = 1,
    feeder_passes: int = 5,
    batch: int | None = None,
    seed: int = 1,
    pg_url: str = "",
) -> dict[str, Any]:
    """A throwaway database (PostgreSQL on ``pg_url`` if given, else SQLite), its schema, then
    ``--role run`` against it; the figures, with ``schema`` saying where the tables came from."""
    token = f"{os.getpid()}_{random.randrange(1 << 30)}"
    work = Path(tempfile.mkdtemp(prefix="cobblestone-credit-"))
    db_name = f"cobblestone_credit_{token}"
    db_url = with_db(pg_url, db_name) if pg_url else f"sqlite:///{work / 'bench.sqlite3'}"
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "DEBUG": "false",  # no query log: it would be part of what is measured
        "SECRET_KEY": f"bench-credit-{token}",
        "LOG_LEVEL": "WARNING",
    }
    if pg_url:
        admin_sql(pg_url, f'CREATE DATABASE "{db_name}"')
    try:
        schema = last_json(run_manage("bench_credit", ["--role", "schema"], env))["schema"]
        args = [
            "--role", "run", "--hosts", str(hosts), "--validations", str(validations), "--quorum", str(quorum),
            "--feeder-passes", str(feeder_passes), "--batch", str(batch or settings.COBBLESTONE_DAEMON_BATCH),
            "--seed", str(seed),
        ]  # fmt: skip
        figures = last_json(run_manage("bench_credit", args, env, timeout=4 * 3600, echo_stderr=True))
        return {**figures, "schema": schema}
    finally:
        if pg_url:
            try:
                admin_sql(pg_url, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            except Exception as exc:
                _log(f"could not drop {db_name}: {exc}")
        shutil.rmtree(work, ignore_errors=True)


def format_report(f: dict[str, Any]) -> list[str]:
    """The table, the per-10,000 figure, the consistency line and the machine."""
    setup, db, hosts = f"quorum {f['quorum']}", f["database"], f["hosts"]
    feeder = statistics.median(f["feeder_seconds"])
    v = f["validation"]
    per_second = f["validations"] / v["seconds"] if v["seconds"] else 0.0
    rows = [
        (
            f"build state ({f['havs']} host_app_versions), hosts",
            f["build_seconds"],
            hosts / f["build_seconds"],
        ),
        (
            f"feeder pass (median of {len(f['feeder_seconds'])}), passes",
            feeder,
            1 / feeder if feeder else 0.0,
        ),
        (
            f"create {f['validations']} WUs ready ({f['results']} results), WUs",
            f["create_seconds"],
            f["validations"] / f["create_seconds"],
        ),
        (
            f"validate {f['validations']} WUs ({v['passes']} passes of {f['batch']}), WUs",
            v["seconds"],
            per_second,
        ),
    ]
    lines = [f"{'setup':<10}{'database':<12}{'hosts':>7}  {'what':<58}{'seconds':>10}{'per second':>12}"]
    for what, seconds, rate in rows:
        lines.append(f"{setup:<10}{db:<12}{hosts:>7}  {what:<58}{seconds:>10.4g}{rate:>12.1f}")
    per_10k = v["seconds"] * 10_000 / f["validations"] if f["validations"] else 0.0
    lines.append(
        f"seconds per 10,000 validations: {per_10k:.1f} ({per_second:.1f} validations/s, "
        f"{f['results'] / v['seconds'] if v['seconds'] else 0.0:.1f} results credited/s); "
        f"feeder: {feeder * 1000:.2f} ms per pass, rows changed per pass {f['feeder_rows']}"
    )
    c = f["checks"]
    lines.append(
        f"consistency: {'OK' if c['ok'] else 'FAIL'}: {c['results'] - c['results_without_credit']}/{c['results']} "
        f"results granted credit > 0, {c['results_not_valid']} not valid, {c['workunits_not_validated']} "
        f"workunits without a canonical result, validator errors {v['errors']}; users' total credit "
        f"{c['users_total']:.6g} vs granted {c['granted_total']:.6g}; mismatched totals: "
        f"{c['accounts_mismatched']} accounts, {c['teams_mismatched']} teams, {c['hosts_mismatched']} hosts"
    )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines.append(
        f"machine: {os.cpu_count()} CPUs, load average {load}, {sys.platform}, Python {sys.version.split()[0]}; "
        f"schema from {f['schema']}; {f['accounts']} accounts, {f['teams']} teams"
    )
    return lines


class Command(BaseCommand):
    help = "Measure the feeder's normalization pass and validations with credit granting (CreditNew)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--hosts", type=int, default=10_000, help="hosts (with host_app_versions)")
        parser.add_argument("--validations", type=int, default=10_000, help="workunits to validate")
        parser.add_argument(
            "--quorum", type=int, choices=[1, 2], default=1, help="min_quorum of each workunit"
        )
        parser.add_argument("--feeder-passes", type=int, default=5, help="timed feeder passes (median shown)")
        parser.add_argument(
            "--batch", type=int, default=0, help="workunits per validator pass (default: daemon's)"
        )
        parser.add_argument("--seed", type=int, default=1, help="random seed of the generated state")
        parser.add_argument("--database", choices=["auto", "sqlite", "postgres"], default="auto")
        parser.add_argument(
            "--database-url", default="", help="PostgreSQL server URL (a fresh database is made there)"
        )
        parser.add_argument("--role", choices=["schema", "run"], help="(internal)")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["hosts"] < 1 or opts["validations"] < 1 or opts["feeder_passes"] < 1:
            raise CommandError("--hosts, --validations and --feeder-passes must be positive")
        batch = opts["batch"] or settings.COBBLESTONE_DAEMON_BATCH
        if opts["role"] == "schema":
            self.stdout.write(json.dumps({"schema": schema_create()}))
            return
        if opts["role"] == "run":
            figures = run_role(
                hosts=opts["hosts"],
                validations=opts["validations"],
                quorum=opts["quorum"],
                feeder_passes=opts["feeder_passes"],
                batch=batch,
                seed=opts["seed"],
            )
            self.stdout.write(json.dumps(figures))
            return
        pg_url = opts["database_url"] or os.environ.get("COBBLESTONE_TEST_DATABASE_URL", "")
        if opts["database"] == "sqlite":
            pg_url = ""
        elif opts["database"] == "postgres" and not pg_url.startswith("postgres"):
            raise CommandError("PostgreSQL needs --database-url or COBBLESTONE_TEST_DATABASE_URL")
        elif pg_url and not pg_url.startswith("postgres"):
            raise CommandError(f"not a PostgreSQL URL: {pg_url}")
        try:
            figures = run_benchmark(
                hosts=opts["hosts"],
                validations=opts["validations"],
                quorum=opts["quorum"],
                feeder_passes=opts["feeder_passes"],
                batch=batch,
                seed=opts["seed"],
                pg_url=pg_url,
            )
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        for line in format_report(figures):
            self.stdout.write(line)
