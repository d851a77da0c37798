"""A living demo project: apps for CPU, NVIDIA GPU and multi-thread, hosts with history,
work in every state, volunteers with credit. `make run` creates it on first start."""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta
from pathlib import Path

from django.db import transaction

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.hosts.models import Host, HostAppVersion, HostCoproc
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.volunteers.models import Account, CreditHistory, Team, make_passwd_hash, passwd_hash
from apps.work.domain.states import (
    AssimilateState,
    ClientState,
    Outcome,
    SequenceState,
    ServerState,
    ValidateState,
)
from apps.work.models import Result, WorkSequence
from apps.work.services import InputSpec, JobSpec, OutputSpec, workunits_create
from apps.work.services.sequences import (
    SequenceSpec,
    sequence_create,
    sequence_end,
    sequence_extend,
    sequence_refresh,
)

DEMO_OUTPUTS = (OutputSpec(open_name="out.txt", max_nbytes=10_000),)

DEMO_SLUG = "demo"
WORKER = Path(__file__).with_name("worker.sh")
PLATFORM = "x86_64-pc-linux-gnu"


def demo_exists() -> bool:
    return Project.objects.filter(slug=DEMO_SLUG).exists()


def demo_seed(*, now: datetime, scratch: Path, seed: int = 7) -> Project:
    """Create the demo project; ``scratch`` is a directory for the generated input files."""
    rng = random.Random(seed)
    project = project_create(
        slug=DEMO_SLUG,
        name="Cobblestone Demo",
        description=(
            "A demonstration project: a tiny app that checksums its input, with CPU, GPU and "
            "multi-thread versions, a few volunteers and their computers."
        ),
    ).project
    with transaction.atomic():
        app = app_create(
            project=project,
            name="checksum",
            user_friendly_name="Checksum demo",
            min_quorum=2,
            target_nresults=2,
            delay_bound=3 * 86400,
        )
        for version_num, plan_class in ((100, ""), (101, "cuda"), (102, "mt")):
            app_version_add(
                project=project,
                app_name=app.name,
                version_num=version_num,
                platform_name=PLATFORM,
                plan_class=plan_class,
                files=[AppFileSpec(path=WORKER)],
                api_version="7.20.0",
                cmdline="1",
            )
        single = app_create(project=project, name="quick", user_friendly_name="Quick single-replica demo")
        app_version_add(
            project=project,
            app_name=single.name,
            version_num=100,
            platform_name=PLATFORM,
            files=[AppFileSpec(path=WORKER)],
            cmdline="1",
        )
        accounts = _volunteers(project, rng)
        hosts = _hosts(accounts, rng, now)
        jobs = []
        for i in range(40):
            path = scratch / f"demo_input_{i:03d}.txt"
            path.write_text(f"demo input {i}\n" + "x" * rng.randint(10, 2000) + "\n")
            jobs.append(
                JobSpec(
                    name=f"checksum_{i:03d}",
                    inputs=(InputSpec(path=path, open_name="in.txt"),),
                    outputs=DEMO_OUTPUTS,
                    rsc_fpops_est=5e9,
                    rsc_fpops_bound=5e12,
                    batch=1,
                )
            )
        wus = workunits_create(project=project, app=app, jobs=jobs, now=now)
        quick_jobs = [
            JobSpec(
                name=f"quick_{i:03d}",
                inputs=(InputSpec(name=f"demo_input_{i:03d}.txt", open_name="in.txt"),),
                outputs=DEMO_OUTPUTS,
                rsc_fpops_est=2e9,
                rsc_fpops_bound=2e12,
                batch=2,
            )
            for i in range(20)
        ]
        workunits_create(project=project, app=single, jobs=quick_jobs, now=now)
        _history(project, wus[:24], hosts, rng, now)
        _sequences(project, app, hosts, now)
    return project


def _volunteers(project: Project, rng: random.Random) -> list[Account]:
    team = Team.objects.create(project=project, name="Cobblers", description="The demo team")
    accounts = []
    for name in ("ada", "grace", "linus", "margaret"):
        email = f"{name}@example.com"
        accounts.append(
            Account.objects.create(
                project=project,
                name=name.title(),
                email_addr=email,
                passwd_hash=make_passwd_hash(passwd_hash("demo-password", email)),
                team=team if rng.random() < 0.75 else None,
            )
        )
    team.founder = accounts[0]
    team.save(update_fields=["founder"])
    return accounts


def _hosts(accounts: list[Account], rng: random.Random, now: datetime) -> list[Host]:
    specs = [
        ("ada-desktop", 8, 4.5e9, ("NVIDIA", "NVIDIA GeForce RTX 4070", 29e12)),
        ("grace-laptop", 4, 2.8e9, None),
        ("linus-server", 32, 3.2e9, None),
        ("margaret-gamer", 12, 5.0e9, ("NVIDIA", "NVIDIA GeForce RTX 3060", 12.7e12)),
        ("ada-pi", 4, 0.9e9, None),
    ]
    hosts = []
    for i, (name, ncpus, fpops, gpu) in enumerate(specs):
        host = Host.objects.create(
            project=accounts[0].project,
            account=accounts[i % len(accounts)],
            domain_name=name,
            p_ncpus=ncpus,
            p_fpops=fpops,
            p_iops=fpops * 2,
            m_nbytes=16e9,
            d_total=500e9,
            d_free=200e9,
            os_name="Linux Debian",
            os_version="12",
            p_vendor="GenuineIntel",
            p_model="Demo CPU",
            platform_name=PLATFORM,
            client_version="7.20.5",
            rpc_time=now - timedelta(hours=rng.randint(1, 30)),
        )
        if gpu:
            HostCoproc.objects.create(
                host=host,
                proc_type=gpu[0],
                name=gpu[1],
                count=1,
                peak_flops=gpu[2],
                available_ram=8e9,
                have_opencl=True,
                compute_capability=860,
            )
        hosts.append(host)
    return hosts


def _history(project: Project, wus: list, hosts: list[Host], rng: random.Random, now: datetime) -> None:
    """Give the first workunits a past: validated with credit, errors, timeouts, work in progress."""
    credit_by_host: dict[int, float] = {}
    for n, wu in enumerate(wus):
        results = list(Result.objects.filter(workunit=wu).order_by("id"))
        pair = rng.sample(hosts, 2)
        sent = now - timedelta(hours=rng.randint(5, 60))
        for result, host in zip(results, pair, strict=True):
            version = (
                host.coprocs.exists() and wu.app.versions.filter(plan_class="cuda").first()
            ) or wu.app.versions.filter(plan_class="").first()
            result.host, result.account, result.app_version = host, host.account, version
            result.platform, result.version_num, result.plan_class = (
                PLATFORM,
                version.version_num,
                version.plan_class,
            )
            result.sent_time, result.report_deadline = sent, sent + timedelta(seconds=wu.delay_bound)
            result.flops_estimate = host.p_fpops
            kind = n % 6
            if kind in (0, 1, 2):  # validated and credited
                elapsed = wu.rsc_fpops_est / host.p_fpops * rng.uniform(0.8, 1.3)
                result.server_state, result.outcome = ServerState.OVER, Outcome.SUCCESS
                result.client_state, result.validate_state = ClientState.FILES_UPLOADED, ValidateState.VALID
                result.received_time = sent + timedelta(seconds=elapsed + 600)
                result.elapsed_time = result.cpu_time = elapsed
                result.claimed_credit = result.granted_credit = round(rng.uniform(0.9, 1.2) * 0.0116, 4)
                _write_demo_outputs(project, result)
                credit_by_host[host.id] = credit_by_host.get(host.id, 0) + result.granted_credit
            elif kind == 3:  # one client error
                result.server_state, result.outcome = ServerState.OVER, Outcome.CLIENT_ERROR
                result.client_state, result.exit_status = ClientState.COMPUTE_ERROR, 1
                result.received_time = sent + timedelta(minutes=5)
                result.stderr_out = "<stderr_txt>in.txt missing</stderr_txt>"
                kind = 4
            elif kind == 4:  # in progress
                result.server_state = ServerState.IN_PROGRESS
            else:  # timed out (no reply)
                result.server_state, result.outcome = ServerState.OVER, Outcome.NO_REPLY
            result.save()
        if n % 6 in (0, 1, 2):
            wu.canonical_result = results[0]
            wu.canonical_credit = results[0].granted_credit
            wu.assimilate_state = AssimilateState.DONE if n % 2 else AssimilateState.READY
            wu.transition_time = None
            wu.save(
                update_fields=["canonical_result", "canonical_credit", "assimilate_state", "transition_time"]
            )
    for host in hosts:
        credit = credit_by_host.get(host.id, 0.0) * 1000
        Host.objects.filter(id=host.id).update(
            total_credit=credit, expavg_credit=credit / 7, expavg_time=now.timestamp()
        )
        Account.objects.filter(id=host.account_id).update(
            total_credit=credit + Account.objects.get(id=host.account_id).total_credit
        )
        for version in host.account.project.apps.first().versions.all():
            if (version.plan_class == "cuda") == host.coprocs.exists():
                HostAppVersion.objects.get_or_create(
                    host=host,
                    app_version=version,
                    app=version.app,
                    defaults={
                        "pfc_n": 12,
                        "pfc_avg": rng.uniform(0.8, 1.5),
                        "et_n": 12,
                        "et_avg": 1 / host.p_fpops,
                        "turnaround_n": 12,
                        "turnaround_avg": 4000,
                        "scale_probation": False,
                        "max_jobs_per_day": 200,
                        "consecutive_valid": 12,
                    },
                )
    for account in Account.objects.filter(project=project):
        Account.objects.filter(id=account.id).update(
            expavg_credit=account.total_credit / 7, expavg_time=now.timestamp()
        )
        for days in range(14, -1, -1):
            CreditHistory.objects.create(
                project=project,
                account=account,
                day=(now - timedelta(days=days)).date(),
                total_credit=account.total_credit * (15 - days) / 15,
                expavg_credit=account.total_credit / 7 * (15 - days) / 15,
            )
    team = Team.objects.get(project=project)
    members = Account.objects.filter(team=team)
    team.total_credit = sum(a.total_credit for a in members)
    team.expavg_credit = team.total_credit / 7
    team.save(update_fields=["total_credit", "expavg_credit"])


def _write_demo_outputs(project: Project, result: Result) -> None:
    """A validated demo result has its uploaded output, as the real pipeline would leave it."""
    project.upload_dir.mkdir(parents=True, exist_ok=True)
    for output in result.output_files.all():
        data = f"demo output of {result.name}\n".encode()
        (project.upload_dir / output.name).write_bytes(data)
        output.nbytes, output.md5_cksum, output.uploaded = len(data), hashlib.md5(data).hexdigest(), True
        output.save(update_fields=["nbytes", "md5_cksum", "uploaded"])


def _sequences(project: Project, app, hosts: list[Host], now: datetime) -> None:
    """Work sequences (seed 001) in several states, made by the creation service: a climate run
    in progress on a host (past a checkpoint), one waiting for a host, a folding trajectory in
    progress and one the project ended. Every step reads the demo input as in.txt, so the demo
    worker can run them; its out.txt is the state, kept on the host between checkpoints."""
    job = JobSpec(
        inputs=(InputSpec(name="demo_input_000.txt", open_name="in.txt"),),
        outputs=(OutputSpec(open_name="out.txt", max_nbytes=10_000, sequence_state=True),),
        rsc_fpops_est=5e9,
        rsc_fpops_bound=5e12,
    )
    specs = (
        (SequenceSpec("climate_run_a", job, 4 * 86400, length=60, restartable_every=7), hosts[2], 10),
        (SequenceSpec("climate_run_b", job, 4 * 86400, length=60, restartable_every=7), None, 0),
        (SequenceSpec("folding_traj_1", job, 86400, restartable_every=1), hosts[0], 2),
        (SequenceSpec("folding_traj_2", job, 86400, restartable_every=1), hosts[3], 4),
    )
    for spec, host, done in specs:
        seq = sequence_create(project=project, app=app, spec=spec, now=now - timedelta(days=done + 1))
        if host is not None:
            _sequence_history(seq, host, done, now)
    sequence_end(sequence_id=WorkSequence.objects.get(project=project, name="folding_traj_2").id, now=now)


def _sequence_history(seq: WorkSequence, host: Host, done: int, now: datetime) -> None:
    """As if ``host`` had computed ``done`` steps (validated) and held the next two."""
    version = seq.app.versions.filter(plan_class="").first()
    start = now - timedelta(days=done + 1)
    WorkSequence.objects.filter(id=seq.id).update(
        state=SequenceState.ASSIGNED, assigned_host=host, assigned_time=start
    )
    missing = done + 3 - seq.workunits.count()
    if missing > 0:  # an open-ended sequence, as its hook would have extended it
        sequence_extend(sequence_id=seq.id, n_steps=missing, now=start)
    for step in range(done + 2):
        wu = seq.workunits.get(sequence_index=step)
        result = wu.results.get()
        sent = start + timedelta(days=step)
        result.host, result.account, result.app_version = host, host.account, version
        result.platform, result.version_num = PLATFORM, version.version_num
        result.sent_time, result.report_deadline = sent, sent + timedelta(seconds=wu.delay_bound)
        result.server_state = ServerState.IN_PROGRESS
        if step < done:
            result.server_state, result.outcome = ServerState.OVER, Outcome.SUCCESS
            result.client_state, result.validate_state = ClientState.FILES_UPLOADED, ValidateState.VALID
            result.received_time = sent + timedelta(hours=20)
            result.elapsed_time = result.cpu_time = 72000
            for output in result.output_files.filter(upload=True):
                seq.project.upload_dir.mkdir(parents=True, exist_ok=True)
                (seq.project.upload_dir / output.name).write_text(f"{seq.name} state after step {step}\n")
            wu.canonical_result = result
            wu.assimilate_state = AssimilateState.DONE
            wu.save(update_fields=["canonical_result", "assimilate_state"])
        result.save()
    nxt = seq.workunits.filter(sequence_index=done + 2).first()
    WorkSequence.objects.filter(id=seq.id).update(first_undispatched=nxt)
    sequence_refresh(sequence_id=seq.id, now=now)
