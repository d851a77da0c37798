"""A living demo project: apps for CPU, NVIDIA GPU and multi-thread, hosts with history,
work in every state, volunteers with credit. `make run` creates it on first start."""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta
from pathlib import Path

from django.db import transaction

from apps.applications.models import App, AppVersion
from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.credit.domain.quota import JobOutcome
from apps.hosts.models import Host, HostAppVersion, HostCoproc
from apps.portal.demo.timeline import Timeline
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.sequences.models import WorkSequence
from apps.sequences.services import (
    SequenceSpec,
    sequence_create,
    sequence_end,
    sequence_extend,
    sequence_refresh,
)
from apps.volunteers.models import Account, Team, make_passwd_hash, passwd_hash
from apps.work.domain.states import ClientState, Outcome, SequenceState, ServerState
from apps.work.models import Result, Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, workunits_create

DEMO_OUTPUTS = (OutputSpec(open_name="out.txt", max_nbytes=10_000),)

DEMO_SLUG = "demo"
# The jobs of the demo's past are bigger than the ones waiting for clients: about 2.5 hours on
# the fastest CPU, so their credit (about 90 each) reads like a real project's.
PAST_FPOPS = 4e13
PAST_JOBS = 24
# How far back the demo's credited jobs go.
PAST_DAYS = 14
DAY = timedelta(days=1)
WORKER = Path(__file__).with_name("worker.sh")
PLATFORM = "x86_64-pc-linux-gnu"


def demo_exists() -> bool:
    return Project.objects.filter(slug=DEMO_SLUG).exists()


def demo_seed(*, now: datetime, scratch: Path, seed: int = 7) -> Project:
    """Create the demo project; ``scratch`` is a directory for the generated input files.

    The project, its volunteers and their computers date from PAST_DAYS + 1 days ago; the
    first PAST_JOBS checksum jobs and the sequences were run in the days since, and the
    back end's services replay what they made of it (apps.portal.demo.timeline)."""
    rng = random.Random(seed)
    # All or nothing: a seed that fails half-way leaves no empty demo project behind, which
    # ``seed_demo --if-empty`` would then take as seeded for ever.
    with transaction.atomic():
        project = project_create(
            slug=DEMO_SLUG,
            name="Cobblestone Demo",
            description=(
                "A demonstration project: a tiny app that checksums its input, with CPU, GPU and "
                "multi-thread versions, a few volunteers and their computers."
            ),
        ).project
        app, single = _apps(project)
        accounts = _volunteers(project, rng)
        hosts = _hosts(accounts, rng, now)
        # Registered before their first job, not today: the status page's "registered in the
        # past 24 hours" and each volunteer's "member since" agree with their credit history.
        started = now - (PAST_DAYS + 1) * DAY
        Project.objects.filter(id=project.id).update(create_time=started)
        for model in (Account, Team, Host):
            model.objects.filter(project=project).update(create_time=started)
        jobs = _checksum_jobs(scratch, rng)
        past_wus = workunits_create(project=project, app=app, jobs=jobs[:PAST_JOBS], now=started)
        workunits_create(project=project, app=app, jobs=jobs[PAST_JOBS:], now=now)
        workunits_create(project=project, app=single, jobs=_quick_jobs(), now=now)
        past = Timeline(project)
        _history(project, past_wus, hosts, rng, now, past)
        sequences = _sequences(project, app, hosts, rng, now, past)
        past.run(now=now)
        for seq in sequences:
            sequence_refresh(sequence_id=seq.id, now=now)
        sequence_end(sequence_id=WorkSequence.objects.get(project=project, name="folding_traj_2").id, now=now)
        past.transition_due(now=now)
        _last_contacts(hosts, now)
    return project


def _apps(project: Project) -> tuple[App, App]:
    """checksum (CPU, CUDA and multi-thread versions, two replicas) and quick (one replica)."""
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
    return app, single


def _checksum_jobs(scratch: Path, rng: random.Random) -> list[JobSpec]:
    jobs = []
    for i in range(40):
        path = scratch / f"demo_input_{i:03d}.txt"
        path.write_text(f"demo input {i}\n" + "x" * rng.randint(10, 2000) + "\n")
        fpops = PAST_FPOPS if i < PAST_JOBS else 5e9
        jobs.append(
            JobSpec(
                name=f"checksum_{i:03d}",
                inputs=(InputSpec(path=path, open_name="in.txt"),),
                outputs=DEMO_OUTPUTS,
                rsc_fpops_est=fpops,
                rsc_fpops_bound=fpops * 1000,
                batch=1,
            )
        )
    return jobs


def _quick_jobs() -> list[JobSpec]:
    return [
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


def _history(
    project: Project,
    wus: list[Workunit],
    hosts: list[Host],
    rng: random.Random,
    now: datetime,
    past: Timeline,
) -> None:
    """Give the first workunits a past: both replicas valid (credit granted by the validator),
    an error beside a task in progress, both in progress, both timed out (sent again). The
    clients' side is written here; ``past`` has the back end do the rest when it happened."""
    for n, wu in enumerate(wus):
        results = list(Result.objects.filter(workunit=wu).order_by("id"))
        kind = n % 6
        if kind in (0, 1, 2):  # validated and credited, in the last two weeks
            sent = now - timedelta(hours=rng.uniform(2 * 24, PAST_DAYS * 24))
        elif kind == 5:  # timed out: past the deadline and its grace
            sent = (
                now
                - timedelta(seconds=wu.delay_bound + project.report_grace_period)
                - timedelta(hours=rng.uniform(2, 96))
            )
        else:  # still within the deadline
            sent = now - timedelta(hours=rng.uniform(2, 40))
        reports = []
        for i, (result, host) in enumerate(zip(results, rng.sample(hosts, 2), strict=True)):
            version = _version_for(wu.app, host)
            _send(result, host, version, sent)
            if kind in (0, 1, 2):
                reports.append(_succeed(project, result, version, rng, past))
            elif kind == 3 and i == 0:  # a client error; the other replica is in progress
                result.server_state, result.outcome = ServerState.OVER, Outcome.CLIENT_ERROR
                result.client_state, result.exit_status = ClientState.COMPUTE_ERROR, 1
                result.received_time = sent + timedelta(minutes=5)
                result.stderr_out = "<stderr_txt>in.txt missing</stderr_txt>"
                past.reported(result, JobOutcome.CLIENT_ERROR, result.received_time)
                past.transition(wu, result.received_time)  # a replacement replica
            result.save()
        if reports:
            past.completed(wu, max(reports))
        elif kind == 5:  # no reply: the transitioner times both out and sends the job again
            deadline = results[0].report_deadline
            assert deadline is not None  # set when sent
            past.transition(wu, deadline + timedelta(seconds=project.report_grace_period))


def _version_for(app: App, host: Host) -> AppVersion:
    """The version the scheduler would pick: CUDA on a host with an NVIDIA GPU, else the CPU one."""
    cuda = app.versions.filter(plan_class="cuda").first() if host.coprocs.exists() else None
    return cuda or app.versions.get(plan_class="")


def _send(result: Result, host: Host, version: AppVersion, sent: datetime) -> None:
    """What the scheduler writes when it sends ``result`` (its host_app_version included)."""
    gpu = host.coprocs.first() if version.plan_class == "cuda" else None
    result.host, result.account, result.app_version = host, host.account, version
    result.platform, result.version_num, result.plan_class = PLATFORM, version.version_num, version.plan_class
    result.sent_time, result.report_deadline = sent, sent + timedelta(seconds=result.workunit.delay_bound)
    result.flops_estimate = gpu.peak_flops if gpu else host.p_fpops
    result.server_state = ServerState.IN_PROGRESS
    HostAppVersion.objects.get_or_create(host=host, app_version=version, defaults={"app": version.app})


def _succeed(
    project: Project,
    result: Result,
    version: AppVersion,
    rng: random.Random,
    past: Timeline,
    output: str | None = None,
) -> datetime:
    """The client ran ``result`` and reported success, having uploaded ``output`` (by default
    the same for every replica of the workunit, so the validator finds them equal); returns
    when it reported."""
    # A GPU reaches about a tenth of its peak; a CPU core about its benchmark.
    speed = result.flops_estimate * (0.1 if version.plan_class == "cuda" else 1.0)
    elapsed = result.workunit.rsc_fpops_est / speed * rng.uniform(0.8, 1.3)
    result.server_state, result.outcome = ServerState.OVER, Outcome.SUCCESS
    result.client_state = ClientState.FILES_UPLOADED
    result.elapsed_time = result.cpu_time = elapsed
    assert result.sent_time is not None
    result.received_time = result.sent_time + timedelta(seconds=elapsed + rng.uniform(600, 6 * 3600))
    _write_outputs(project, result, output or f"demo output of {result.workunit.name}\n")
    past.reported(result, JobOutcome.SUCCESS, result.received_time)
    return result.received_time


def _last_contacts(hosts: list[Host], now: datetime) -> None:
    """A host's last contact is no earlier than the last result it was sent or reported."""
    for host in hosts:
        times = [
            t
            for sent, received in Result.objects.filter(host=host).values_list("sent_time", "received_time")
            for t in (sent, received)
            if t is not None
        ]
        latest = max(times, default=None)
        if latest is not None and host.rpc_time is not None and latest > host.rpc_time:
            Host.objects.filter(id=host.id).update(rpc_time=min(latest + timedelta(minutes=1), now))


def _write_outputs(project: Project, result: Result, text: str) -> None:
    """The uploaded outputs of a result, as the upload handler leaves them."""
    project.upload_dir.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    for output in result.output_files.filter(upload=True):
        (project.upload_dir / output.name).write_bytes(data)
        output.nbytes, output.md5_cksum, output.uploaded = len(data), hashlib.md5(data).hexdigest(), True
        output.save(update_fields=["nbytes", "md5_cksum", "uploaded"])


def _sequences(
    project: Project, app: App, hosts: list[Host], rng: random.Random, now: datetime, past: Timeline
) -> list[WorkSequence]:
    """Work sequences in several states, made by the creation service: a climate run
    in progress on a host (past a checkpoint), one waiting for a host, a folding trajectory in
    progress and one the project ends (``demo_seed``, once the past is replayed). Every step
    reads the demo input as in.txt, so the demo worker can run them; its out.txt is the
    state, kept on the host between checkpoints."""
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
    sequences = []
    for spec, host, done in specs:
        seq = sequence_create(project=project, app=app, spec=spec, now=now - (done + 1) * DAY)
        if host is not None:
            _sequence_history(seq, host, done, rng, now, past)
        sequences.append(seq)
    return sequences


def _sequence_history(
    seq: WorkSequence, host: Host, done: int, rng: random.Random, now: datetime, past: Timeline
) -> None:
    """As if ``host`` had computed ``done`` steps, one a day (validated as they came in), and
    held the next two."""
    version = seq.app.versions.get(plan_class="")
    start = now - (done + 1) * DAY
    WorkSequence.objects.filter(id=seq.id).update(
        state=SequenceState.ASSIGNED, assigned_host=host, assigned_time=start
    )
    missing = done + 3 - seq.workunits.count()
    if missing > 0:  # an open-ended sequence, as its hook would have extended it
        sequence_extend(sequence_id=seq.id, n_steps=missing, now=start)
    for step in range(done + 2):
        wu = seq.workunits.get(sequence_index=step)
        result = wu.results.get()
        _send(result, host, version, start + step * DAY)
        if step < done:
            state = f"{seq.name} state after step {step}\n"
            past.completed(wu, _succeed(seq.project, result, version, rng, past, output=state))
        result.save()
    nxt = seq.workunits.filter(sequence_index=done + 2).first()
    WorkSequence.objects.filter(id=seq.id).update(first_undispatched=nxt)
