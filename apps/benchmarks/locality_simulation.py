"""A simulated volunteer population for measuring locality scheduling.

Used by ``manage.py bench_locality`` and by the simulation test. The clients behave
like BOINC's where it matters for data transfer: each RPC lists the sticky files the
host holds, a sticky input file is downloaded only when the host does not hold it, it
is kept until the server says ``delete_file_info``, tasks compute instantly and are
reported in the next RPC. The scheduler is reached through ``transport`` (HTTP in the
command, a direct service call in the test), so this module never imports it.

Both runs (locality on and off) get the same workload: ``files`` large files, each with
``workunits_per_file`` workunits of ``target_nresults`` results, created interleaved
across files, as a project making one batch per step over all its data files would.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.core import clock
from apps.locality.services import working_set_update
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.protocol import (
    HostInfo,
    ReportedFile,
    ReportedResult,
    SchedulerReply,
    SchedulerRequest,
    StickyFile,
    TimeStats,
)
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.domain.locality_names import workunit_name
from apps.work.domain.states import ServerState
from apps.work.models import InputFile, Result
from apps.work.services import InputSpec, JobSpec, workunits_create

PLATFORM = "x86_64-pc-linux-gnu"
HOST_FLOPS = 1e9
JOB_FPOPS = 1e11  # 100 s a job on a simulated host
APP_NAME = "locsim"

Transport = Callable[[SchedulerRequest], SchedulerReply]


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    hosts: int = 40
    files: int = 30
    workunits_per_file: int = 16
    target_nresults: int = 2
    file_nbytes: int = 20_000_000
    jobs_per_rpc: int = 3
    max_rounds: int = 200
    seed: int = 1


@dataclass(frozen=True, slots=True)
class SimulationOutcome:
    locality: bool
    files: int
    results: int
    results_sent: int
    results_reported: int
    rpcs: int
    rounds: int
    downloads: int
    bytes_sent: int
    deletes: int
    downloads_per_file: tuple[int, ...]  # one entry per large file, in name order

    @property
    def mean_downloads_per_file(self) -> float:
        return self.downloads / self.files if self.files else 0.0

    @property
    def max_downloads_per_file(self) -> int:
        return max(self.downloads_per_file, default=0)


@dataclass(slots=True)
class SimHost:
    """One simulated BOINC client attached with its own account."""

    authenticator: str
    cpid: str
    hostid: int = 0
    seqno: int = 0
    sticky: dict[str, float] = field(default_factory=dict)
    running: list[str] = field(default_factory=list)
    downloads: Counter[str] = field(default_factory=Counter)
    bytes_downloaded: float = 0.0
    deletes: int = 0

    def request(self, *, jobs: int) -> SchedulerRequest:
        seconds = max(0.0, (jobs - 0.5) * JOB_FPOPS / HOST_FLOPS) if jobs else 0.0
        self.seqno += 1
        return SchedulerRequest(
            authenticator=self.authenticator,
            hostid=self.hostid,
            rpc_seqno=self.seqno,
            core_client_major_version=7,
            core_client_minor_version=20,
            core_client_release=5,
            work_req_seconds=seconds,
            cpu_req_secs=seconds,
            cpu_req_instances=0.0,
            platform_name=PLATFORM,
            time_stats=TimeStats(on_frac=1.0, active_frac=1.0, gpu_active_frac=1.0),
            host_info=HostInfo(
                p_ncpus=4,
                p_fpops=HOST_FLOPS,
                p_iops=HOST_FLOPS,
                m_nbytes=8e9,
                d_total=2e12,
                d_free=1e12,
                host_cpid=self.cpid,
                domain_name=self.cpid,
                os_name="Linux Debian",
            ),
            results=tuple(_report(name) for name in self.running),
            sticky_files=tuple(
                StickyFile(name=name, nbytes=nbytes, status=1) for name, nbytes in sorted(self.sticky.items())
            ),
            other_results=(),
        )

    def absorb(self, reply: SchedulerReply) -> int:
        """Apply a reply as the client would; returns the number of new tasks."""
        if reply.hostid:
            self.hostid = reply.hostid
        self.running = []
        for name in reply.delete_file_infos:  # the client clears sticky; GC deletes the file
            if self.sticky.pop(name, None) is not None:
                self.deletes += 1
        for info in reply.file_infos:
            if not info.sticky or info.is_upload:
                continue  # app files and uploads are not the large files measured here
            if info.name not in self.sticky:
                self.downloads[info.name] += 1
                self.bytes_downloaded += info.nbytes or 0.0
            self.sticky[info.name] = info.nbytes or 0.0
        self.running = [r.name for r in reply.results]
        return len(self.running)


def _report(name: str) -> ReportedResult:
    return ReportedResult(
        name=name,
        final_cpu_time=95.0,
        final_elapsed_time=100.0,
        exit_status=0,
        state=5,  # files uploaded
        platform=PLATFORM,
        version_num=100,
        app_version_num=100,
        files=(ReportedFile(name=f"{name}_0", nbytes=10, max_nbytes=1e6, md5_cksum="0" * 32),),
    )


def large_file_name(index: int) -> str:
    return f"sim{index:03d}.dat"


def simulation_setup(*, slug: str, config: SimulationConfig, locality: bool, work_dir: Path) -> Project:
    """A project with one app, the large files, the workunits and one account per host."""
    project = project_create(
        slug=slug, name=f"Locality simulation ({'on' if locality else 'off'})", locality_scheduling=locality
    ).project
    project.request_delay = 0
    project.save(update_fields=["request_delay"])
    app = app_create(
        project=project,
        name=APP_NAME,
        min_quorum=config.target_nresults,
        target_nresults=config.target_nresults,
        max_total_results=config.target_nresults * 2,
    )
    worker = work_dir / "locsim_worker.sh"
    worker.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    app_version_add(
        project=project,
        app_name=APP_NAME,
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    names = [large_file_name(i) for i in range(config.files)]
    # The large files are only sized, never downloaded: rows are enough. Sticky in both
    # runs, so the clients' caching is the same and only the scheduler differs.
    InputFile.objects.bulk_create(
        InputFile(
            project=project,
            name=name,
            md5_cksum=hashlib.md5(name.encode()).hexdigest(),
            nbytes=config.file_nbytes,
            sticky=True,
            report_on_rpc=True,
        )
        for name in names
    )
    jobs = [
        JobSpec(
            name=workunit_name(name, f"{k:04d}"),
            inputs=(InputSpec(name=name),),
            rsc_fpops_est=JOB_FPOPS,
            rsc_fpops_bound=JOB_FPOPS * 100,
        )
        for k in range(config.workunits_per_file)
        for name in names
    ]
    workunits_create(project=project, app=app, jobs=jobs)
    Account.objects.bulk_create(
        Account(
            project=project,
            name=f"sim{i}",
            email_addr=f"sim{i}@{slug}.example.invalid",
            passwd_hash=make_passwd_hash(None),
        )
        for i in range(config.hosts)
    )
    return project


def simulation_run(*, project: Project, config: SimulationConfig, transport: Transport) -> SimulationOutcome:
    """Drive the hosts until all work is done (or ``max_rounds``), running the
    working-set manager between rounds as Celery beat would."""
    rng = random.Random(config.seed)
    authenticators = (
        Account.objects.filter(project=project).order_by("id").values_list("authenticator", flat=True)
    )
    hosts = [SimHost(authenticator=a, cpid=f"{project.slug}-host{i}") for i, a in enumerate(authenticators)]
    rpcs = 0
    for host in hosts:  # attach: the scheduler learns the hosts, so N (active hosts) is known
        host.absorb(transport(host.request(jobs=0)))
        rpcs += 1
    working_set_update(project=project, now=clock.now())
    rounds = 0
    while rounds < config.max_rounds:
        rounds += 1
        new_tasks = 0
        had_running = any(h.running for h in hosts)
        rng.shuffle(hosts)
        for host in hosts:
            new_tasks += host.absorb(transport(host.request(jobs=config.jobs_per_rpc)))
            rpcs += 1
        working_set_update(project=project, now=clock.now())
        if new_tasks == 0 and not had_running:
            break
    per_file: Counter[str] = Counter()
    for host in hosts:
        per_file.update(host.downloads)
    names = [large_file_name(i) for i in range(config.files)]
    results = Result.objects.filter(project=project)
    return SimulationOutcome(
        locality=project.locality_scheduling,
        files=config.files,
        results=results.count(),
        results_sent=results.filter(sent_time__isnull=False).count(),
        results_reported=results.filter(server_state=ServerState.OVER).count(),
        rpcs=rpcs,
        rounds=rounds,
        downloads=sum(per_file.values()),
        bytes_sent=int(sum(h.bytes_downloaded for h in hosts)),
        deletes=sum(h.deletes for h in hosts),
        downloads_per_file=tuple(per_file.get(name, 0) for name in names),
    )
