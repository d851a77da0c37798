"""bench_replication: what replication costs and what it lets through, per policy.

    python manage.py bench_replication [--hosts 40] [--warmup 400] [--jobs 1000] [--seed 1] [--flaky 0.1]

Simulated hosts go through the real scheduler RPC (``scheduler_request_handle``), report
their results through it with their outputs in the upload area (as the upload handler
leaves them), and the real transitioner, validator (bitwise) and credit feeder run between
steps. Simulated time moves 30 minutes a step; every job has the same size (an hour on a
host of average speed). The fleet, the same in every policy (seeded):

- most hosts honest (speed 0.5-2 times the average);
- 5 % faulty: a wrong output 20 % of the time;
- with ``--flaky F``, a share F of hosts flaky: 20 % of their jobs never come back (they
  time out after the delay bound; none by default);
- one cheater: honest for its first 20 jobs, then it sends a made-up output at once and
  claims 100 times the elapsed time a real run would take.

Three policies, each in a project of its own in one throwaway SQLite database:

- ``quorum 2``: every workunit has two results (min_quorum 2);
- ``adaptive``: adaptive replication, replicated to 2 on untrusted hosts;
- ``adaptive + reliable``: the same with reliable_priority_on_over 10,
  reliable_on_priority 10, reliable_reduced_delay_bound 0.25, reliable_max_avg_turnaround
  4 hours and batch_accel_fraction 0.05.

A warm-up batch (``--warmup``) runs first, so that hosts have records; the figures are of
the measured batch (``--jobs``) created after it finished, with a batch as large queued
behind it (the project's next work, which retries compete with): results run (sent) per validated
workunit, the share of validated workunits whose canonical output is wrong, the honest
hosts' mean granted credit per valid job, and the simulated hours from 95 % to 100 % of the
batch validated (its tail).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.benchmarks.support import last_json, machine_description, run_manage, schema_create
from apps.core import clock
from apps.credit.services import credit_normalize_project
from apps.projects.services import project_create
from apps.protocol import HostInfo, ReportedFile, ReportedResult, SchedulerRequest, TimeStats
from apps.scheduler.services import scheduler_request_handle
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.domain.states import ValidateState
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import JobSpec, workunits_create, workunits_transition, workunits_validate

STEP = timedelta(minutes=30)
JOB_SECONDS = 3600.0  # at the average speed
HOST_FLOPS = 1e9
DELAY_BOUND = 2 * 86400.0
MAX_STEPS = 2000
POLICIES = ("quorum 2", "adaptive", "adaptive + reliable")


def _log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


@dataclass
class SimHost:
    """A simulated host: what it is, and the job it holds."""

    name: str
    kind: str  # honest, faulty, flaky, cheater
    speed: float
    authenticator: str = ""
    host_id: int = 0
    seqno: int = 0
    done_jobs: int = 0
    job: str = ""  # result name
    job_ends: datetime | None = None
    job_output: bytes = b""
    job_elapsed: float = 0.0
    job_lost: bool = False


@dataclass
class Tally:
    wrong: set[str] = field(default_factory=set)  # results whose output is wrong
    validated_at: dict[int, datetime] = field(default_factory=dict)  # workunit id -> time


def run_role(*, hosts: int, warmup: int, jobs: int, seed: int, flaky: float) -> dict[str, Any]:
    """All three policies in this process's database; their figures. Every service reads the
    simulated time while it runs (``clock.now``, restored at the end)."""
    start = datetime(2026, 1, 5, tzinfo=UTC)
    sim_now = [start]
    real_now = clock.now
    clock.now = lambda: sim_now[0]
    figures = {}
    try:
        for index, policy in enumerate(POLICIES):
            sim_now[0] = start
            began = time.perf_counter()
            figures[policy] = _run_policy(
                policy, index, hosts=hosts, warmup=warmup, jobs=jobs, seed=seed, flaky=flaky, now=sim_now
            )
            figures[policy]["wall_seconds"] = time.perf_counter() - began
            _log(f"{policy}: {figures[policy]}")
    finally:
        clock.now = real_now
    return {"policies": figures, "hosts": hosts, "warmup": warmup, "jobs": jobs, "seed": seed, "flaky": flaky}


def _fleet(n: int, rng: random.Random, flaky: float) -> list[SimHost]:
    n_faulty = max(1, round(0.05 * n))
    n_flaky = round(flaky * n)
    kinds = ["cheater"] + ["faulty"] * n_faulty + ["flaky"] * n_flaky
    kinds += ["honest"] * (n - len(kinds))
    return [SimHost(name=f"h{i}", kind=kind, speed=rng.uniform(0.5, 2.0)) for i, kind in enumerate(kinds)]


def _run_policy(
    policy: str,
    index: int,
    *,
    hosts: int,
    warmup: int,
    jobs: int,
    seed: int,
    flaky: float,
    now: list[datetime],
) -> dict[str, Any]:

    project = project_create(slug=f"rep{index}", name=f"Replication {policy}").project
    project.report_grace_period = 3600
    if policy == "adaptive + reliable":
        project.reliable_priority_on_over = 10
        project.reliable_on_priority = 10
        project.reliable_reduced_delay_bound = 0.25
        project.reliable_max_avg_turnaround = 4 * 3600
        project.batch_accel_fraction = 0.05
    project.save()
    worker = Path(tempfile.mkdtemp()) / "worker.sh"
    worker.write_text("#!/bin/sh\n")
    app = app_create(
        project=project,
        name="rep",
        min_quorum=2,
        target_nresults=2,
        delay_bound=DELAY_BOUND,
        adaptive_replication=policy != "quorum 2",
    )
    app_version_add(
        project=project,
        app_name="rep",
        version_num=100,
        platform_name="x86_64-pc-linux-gnu",
        files=[AppFileSpec(path=worker)],
    )
    rng = random.Random(seed)
    fleet = _fleet(hosts, rng, flaky)
    for h in fleet:
        account = Account.objects.create(
            project=project,
            name=h.name,
            email_addr=f"{h.name}@example.com",
            passwd_hash=make_passwd_hash(None),
        )
        h.authenticator = account.authenticator
    tally = Tally()

    def batch(name: str, n: int, number: int) -> list[int]:
        specs = [
            JobSpec(name=f"{name}{i}", rsc_fpops_est=JOB_SECONDS * HOST_FLOPS, rsc_fpops_bound=1e6 * JOB_SECONDS * HOST_FLOPS, batch=number)
            for i in range(n)
        ]  # fmt: skip
        return [wu.id for wu in workunits_create(project=project, app=app, jobs=specs, now=now[0])]

    warm = batch("warm", warmup, 1)
    _until_done(project, fleet, warm, tally, rng, now)
    measured = batch("job", jobs, 2)
    batch("next", jobs, 3)  # the project's next work, queued behind it: retries compete with it
    first = now[0]
    _until_done(project, fleet, measured, tally, rng, now)
    return _figures(measured, fleet, tally, first, now[0])


def _until_done(
    project: Any,
    fleet: list[SimHost],
    wu_ids: list[int],
    tally: Tally,
    rng: random.Random,
    now: list[datetime],
) -> None:

    for _ in range(MAX_STEPS):
        order = list(fleet)
        rng.shuffle(order)
        for h in order:
            _host_step(project, h, tally, rng, now[0])
        workunits_transition(project=project, now=now[0])
        workunits_validate(project=project, now=now[0])
        workunits_transition(project=project, now=now[0])
        credit_normalize_project(project=project)
        done = Workunit.objects.filter(id__in=wu_ids).exclude(canonical_result=None, error_mask=0)
        for wu_id in done.values_list("id", flat=True):
            tally.validated_at.setdefault(wu_id, now[0])
        if all(w in tally.validated_at for w in wu_ids):
            return
        now[0] += STEP
    raise RuntimeError(f"batch not finished after {MAX_STEPS} steps")


def _host_step(project: Any, h: SimHost, tally: Tally, rng: random.Random, now: datetime) -> None:
    """The host reports its finished job (unless it lost it) and asks for one when idle."""

    if h.job and h.job_ends is not None and h.job_ends > now:
        return  # still running
    reports: tuple[ReportedResult, ...] = ()
    if h.job and not h.job_lost:
        files = []
        for f in OutputFile.objects.filter(result__name=h.job, result__project=project):
            project.upload_dir.mkdir(parents=True, exist_ok=True)
            (project.upload_dir / f.name).write_bytes(h.job_output)
            OutputFile.objects.filter(id=f.id).update(uploaded=True, nbytes=len(h.job_output))
            files.append(ReportedFile(name=f.name, nbytes=len(h.job_output), max_nbytes=1e6))
        reports = (
            ReportedResult(
                name=h.job,
                final_cpu_time=h.job_elapsed,
                final_elapsed_time=h.job_elapsed,
                state=5,
                platform="x86_64-pc-linux-gnu",
                version_num=100,
                app_version_num=100,
                stderr_out="<stderr_txt>ok</stderr_txt>",
                files=tuple(files),
            ),
        )
        h.done_jobs += 1
    h.job, h.job_ends = "", None
    h.seqno += 1
    req = SchedulerRequest(
        authenticator=h.authenticator,
        hostid=h.host_id,
        rpc_seqno=h.seqno,
        core_client_major_version=7,
        core_client_minor_version=20,
        core_client_release=5,
        work_req_seconds=1.0,
        cpu_req_secs=1.0,
        platform_name="x86_64-pc-linux-gnu",
        time_stats=TimeStats(on_frac=1.0, active_frac=1.0, gpu_active_frac=1.0),
        host_info=HostInfo(
            p_ncpus=1,
            p_fpops=HOST_FLOPS * h.speed,
            p_iops=1e9,
            m_nbytes=8e9,
            d_total=2e11,
            d_free=1e11,
            host_cpid=f"cpid-{project.slug}-{h.name}",
            domain_name=h.name,
            os_name="Linux Debian",
        ),
        results=reports,
    )
    reply = scheduler_request_handle(project=project, req=req, now=now)
    if reply.hostid:
        h.host_id = reply.hostid
    if not reply.results:
        return
    name = reply.results[0].name
    real = JOB_SECONDS / h.speed * rng.uniform(0.9, 1.1)
    h.job, h.job_lost = name, h.kind == "flaky" and rng.random() < 0.2
    output, elapsed = b"42\n", real
    if h.kind == "faulty" and rng.random() < 0.2:
        output = f"noise {rng.random()}\n".encode()
    if h.kind == "cheater" and h.done_jobs >= 20:
        output, elapsed, real = b"made up\n", 100 * real, real / 10
    if output != b"42\n":
        tally.wrong.add(name)
    h.job_output, h.job_elapsed = output, elapsed
    h.job_ends = now + timedelta(seconds=real)
    if h.job_lost:
        h.job, h.job_ends = "", None  # it never comes back: the host takes other work


def _figures(
    wu_ids: list[int], fleet: list[SimHost], tally: Tally, first: datetime, last: datetime
) -> dict[str, Any]:

    validated = list(Workunit.objects.filter(id__in=wu_ids).exclude(canonical_result=None))
    canonical = {wu.canonical_result_id for wu in validated}
    sent = Result.objects.filter(workunit_id__in=wu_ids).exclude(sent_time=None).count()
    wrong_hosts = Result.objects.filter(id__in=canonical, name__in=tally.wrong).values_list(
        "host_id", flat=True
    )
    kinds = {h.host_id: h.kind for h in fleet}
    wrong = len(wrong_hosts)
    by_cheater = sum(kinds.get(host_id) == "cheater" for host_id in wrong_hosts)
    honest = {h.host_id for h in fleet if h.kind == "honest"}
    credits = list(
        Result.objects.filter(
            workunit_id__in=wu_ids, host_id__in=honest, validate_state=ValidateState.VALID
        ).values_list("granted_credit", flat=True)
    )
    times = sorted(tally.validated_at[w] for w in wu_ids)
    at95 = times[max(0, int(0.95 * len(times)) - 1)]
    return {
        "validated": len(validated),
        "failed": len(wu_ids) - len(validated),
        "results_per_validated": sent / len(validated) if validated else 0.0,
        "wrong_accepted": wrong / len(validated) if validated else 0.0,
        "wrong_accepted_n": wrong,
        "wrong_accepted_cheater": by_cheater,
        "honest_credit_per_job": statistics.fmean(credits) if credits else 0.0,
        "tail_hours": (times[-1] - at95).total_seconds() / 3600,
        "batch_hours": (times[-1] - first).total_seconds() / 3600,
    }


def run_benchmark(*, hosts: int, warmup: int, jobs: int, seed: int, flaky: float) -> dict[str, Any]:
    """A throwaway SQLite database and data area, its schema, then ``--role run`` against it."""
    work = Path(tempfile.mkdtemp(prefix="cobblestone-replication-"))
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "DEBUG": "false",
        "SECRET_KEY": f"bench-replication-{os.getpid()}",
        "LOG_LEVEL": "ERROR",
    }
    try:
        last_json(run_manage("bench_replication", ["--role", "schema"], env))
        args = [
            "--role",
            "run",
            "--hosts",
            str(hosts),
            "--warmup",
            str(warmup),
            "--jobs",
            str(jobs),
            "--seed",
            str(seed),
            "--flaky",
            str(flaky),
        ]
        return last_json(run_manage("bench_replication", args, env, timeout=6 * 3600, echo_stderr=True))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def format_report(f: dict[str, Any]) -> list[str]:
    lines = [
        f"{f['hosts']} hosts ({100 * f['flaky']:.0f} % flaky), warm-up batch {f['warmup']}, "
        f"measured batch {f['jobs']} workunits, seed {f['seed']}",
        "",
        f"{'policy':<22}{'results/WU':>11}{'wrong accepted':>20}{'honest credit/job':>19}"
        f"{'last 5 % (h)':>14}{'batch (h)':>11}{'failed':>8}",
    ]
    for policy, p in f["policies"].items():
        wrong = f"{100 * p['wrong_accepted']:.2f} % ({p['wrong_accepted_n']}, {p['wrong_accepted_cheater']})"
        lines.append(
            f"{policy:<22}{p['results_per_validated']:>11.3f}{wrong:>20}{p['honest_credit_per_job']:>19.1f}"
            f"{p['tail_hours']:>14.1f}{p['batch_hours']:>11.1f}{p['failed']:>8}"
        )
    lines += [
        "",
        "wrong accepted: share of validated workunits whose canonical output is wrong (count, of which the cheater's)",
        f"machine: {machine_description()}",
    ]
    return lines


class Command(BaseCommand):
    help = "Replication policies through the real scheduler and daemons: cost, wrong results, credit, tails."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--hosts", type=int, default=40)
        parser.add_argument("--warmup", type=int, default=400, help="workunits of the warm-up batch")
        parser.add_argument("--jobs", type=int, default=1000, help="workunits of the measured batch")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument(
            "--flaky", type=float, default=0.0, help="share of hosts that lose 20 %% of their jobs"
        )
        parser.add_argument("--role", choices=["orchestrate", "schema", "run"], default="orchestrate")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["hosts"] < 20 or opts["warmup"] < 0 or opts["jobs"] < 20 or not 0 <= opts["flaky"] <= 0.5:
            raise CommandError(
                "--hosts and --jobs must be at least 20, --warmup not negative, --flaky within 0-0.5"
            )
        if opts["role"] == "schema":
            self.stdout.write(json.dumps({"schema": schema_create()}))
            return
        figures_args = {k: opts[k] for k in ("hosts", "warmup", "jobs", "seed", "flaky")}
        if opts["role"] == "run":
            self.stdout.write(json.dumps(run_role(**figures_args)))
            return
        try:
            figures = run_benchmark(**figures_args)
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
        for line in format_report(figures):
            self.stdout.write(line)
