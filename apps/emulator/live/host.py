"""One emulated host in live mode: a client policy driving real scheduler RPCs.

The host keeps what a BOINC client keeps for one project (host id, RPC sequence number,
code-signing key, its queue of jobs) and reuses the emulator's policies and job model:
each job from a reply becomes a ``SimJob`` whose speed comes from the reply's app version
``flops`` and whose size is the workunit's ``rsc_fpops_est`` (the true size varies around
it), so the policy's round-robin simulation, work fetch and scheduling run unchanged.
Time is simulated: ``advance`` moves the jobs to a given simulated second.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import ClientPrefs, HostSpec, ProjectSpec, ResourceSpec
from apps.emulator.domain.policies import ClientPolicy, FetchChoice, make_policy
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState, SimJob, SimProject
from apps.emulator.live.wire import OutputFile, Session, UploadGate, upload
from apps.protocol import (
    Coproc,
    FileInfoDesc,
    GlobalPrefs,
    HostInfo,
    OtherResult,
    ProtocolError,
    ReportedFile,
    ReportedResult,
    SchedulerReply,
    SchedulerRequest,
    TimeStats,
    parse_reply,
    render_request,
)

PLATFORM = "x86_64-pc-linux-gnu"
PROJECT = "live"  # the one project every live host is attached to
RESULT_FILES_UPLOADED = 5  # BOINC's result state for a finished, uploaded task
XML_FORM = "application/x-www-form-urlencoded"  # what the stock client labels its XML with
RETRY_DELAY = 60.0  # simulated seconds before an RPC is retried (BOINC's minimum RPC backoff)
_DONE = 1e-6


@dataclass(frozen=True, slots=True)
class HostHardware:
    """An emulated computer: CPUs and, optionally, NVIDIA GPUs."""

    ncpus: int
    cpu_flops: float
    ngpus: int = 0
    gpu_flops: float = 0.0
    gpu_name: str = ""
    gpu_ram: float = 0.0
    ram: float = 16e9

    def spec(self) -> HostSpec:
        resources = [ResourceSpec(ProcType.CPU, self.ncpus, self.cpu_flops)]
        if self.ngpus:
            resources.append(ResourceSpec(ProcType.NVIDIA, self.ngpus, self.gpu_flops))
        return HostSpec(resources=tuple(resources))


def varied_hardware(count: int, *, seed: int = 1) -> list[HostHardware]:
    """``count`` computers: 2-32 CPUs of 2-6 GFLOPS, about a third with 1-2 NVIDIA GPUs."""
    rng = random.Random(seed)
    gpus = (("NVIDIA GeForce GTX 1660", 5e12, 6e9), ("NVIDIA GeForce RTX 3070", 2e13, 8e9))
    hosts = []
    for i in range(count):
        ncpus = rng.choice((2, 4, 4, 8, 8, 12, 16, 32))
        hardware = HostHardware(ncpus=ncpus, cpu_flops=rng.uniform(2e9, 6e9), ram=ncpus * 2e9)
        if i % 3 == 2:
            name, flops, ram = rng.choice(gpus)
            hardware = HostHardware(
                ncpus=ncpus,
                cpu_flops=hardware.cpu_flops,
                ngpus=rng.choice((1, 1, 2)),
                gpu_flops=flops,
                gpu_name=name,
                gpu_ram=ram,
                ram=hardware.ram,
            )
        hosts.append(hardware)
    return hosts


@dataclass(slots=True)
class HostStats:
    """What one host saw; merged into the run summary at the end."""

    rpcs: int = 0
    latencies: list[float] = field(default_factory=list)
    jobs_received: int = 0
    results_reported: int = 0
    results_acked: int = 0
    uploads: int = 0
    errors: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)  # result names, to find double dispatch


@dataclass(slots=True)
class WireJob:
    """What the reply said about a job that the ``SimJob`` does not carry."""

    result_name: str
    version_num: int
    plan_class: str
    outputs: tuple[FileInfoDesc, ...]
    elapsed: float = 0.0


class LiveHost:
    """One host's client state and its conversation with the scheduler."""

    def __init__(
        self,
        *,
        index: int,
        hardware: HostHardware,
        master_url: str,
        authenticator: str,
        policy: str,
        prefs: ClientPrefs,
        gate: UploadGate,
        session: Session,
        report_delay: float,
        seed: int = 1,
    ) -> None:
        self.index = index
        self.hardware = hardware
        self.scheduler_url = master_url.rstrip("/") + "/cgi"
        self.authenticator = authenticator
        self.gate = gate
        self.session = session
        self.report_delay = report_delay
        self.rng = random.Random(f"{seed}:{index}")
        spec = ProjectSpec(name=PROJECT, resource_share=100.0, apps=())
        self.state = ClientState(
            host=hardware.spec(),
            prefs=prefs,
            projects={PROJECT: SimProject(spec=spec, attached=True)},
            rng=random.Random(f"{seed}:{index}:policy"),
        )
        self.policy: ClientPolicy = make_policy(policy, prefs)
        self.policy.attach(self.state, PROJECT)
        self.hostid = 0
        self.rpc_seqno = 0
        self.code_sign_key = ""
        self.not_before = 0.0  # simulated time before which the server asked not to be contacted
        self.wire: dict[int, WireJob] = {}
        self.finished: list[tuple[float, WireJob]] = []  # (finish time, job), not yet acknowledged
        self.stats = HostStats()
        self._next_key = 0
        self._started = time.time()

    # -- time -------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Run the jobs from ``state.now`` to simulated time ``t``; finished jobs await report."""
        state = self.state
        dt = t - state.now
        if dt <= 0:
            return
        used: dict[tuple[str, ProcType], float] = {}
        done: list[SimJob] = []
        for job in state.jobs:
            if not job.running:
                continue
            run = min(dt, job.time_to_finish)
            job.done_fpops += job.flops * run
            self.wire[job.key].elapsed += run
            key = (job.project, job.proc_type)
            used[key] = used.get(key, 0.0) + job.usage * run
            if job.time_to_finish <= _DONE:
                done.append(job)
        state.now = t
        self.policy.account(state, dt, used)
        for job in done:
            state.remove_job(job)
            self.finished.append((t, self.wire.pop(job.key)))
            self._upload_outputs(self.finished[-1][1])

    def next_event(self, end: float) -> float:
        """The next simulated time something happens: a job ends, a backoff or delay ends..."""
        now = self.state.now
        times = [end, now + self.state.prefs.poll_interval]
        times += [now + j.time_to_finish for j in self.state.jobs if j.running]
        wakeup = self.policy.next_wakeup(self.state)
        if wakeup is not None:
            times.append(wakeup)
        if self.not_before > now:
            times.append(self.not_before)
        if self.finished:
            times.append(max(self.finished[0][0] + self.report_delay, self.not_before))
        return max(min(times), now + _DONE)

    def decide(self, *, preempt: bool) -> None:
        """Make the RPC the policy or a due report asks for, then schedule the jobs."""
        now = self.state.now
        choice = self.policy.work_fetch(self.state) if now >= self.not_before else None
        report_due = bool(self.finished) and now >= self.finished[0][0] + self.report_delay
        if choice is not None or (report_due and now >= self.not_before):
            self.rpc(choice)
        self.policy.schedule(self.state, preempt)

    # -- the RPC ----------------------------------------------------------------------

    def rpc(self, choice: FetchChoice | None) -> SchedulerReply | None:
        # A report-only RPC asks for nothing, in the policy's own request style.
        work = (
            choice.request if choice is not None else WorkRequest(rsc_spec_request=self.policy.name != "v4")
        )
        reports = [job for _, job in self.finished]
        body = render_request(self.request(work, reports))
        start = time.perf_counter()
        try:
            status, data = self.session.request("POST", self.scheduler_url, body, content_type=XML_FORM)
        except OSError as exc:
            return self._failed(f"RPC to {self.scheduler_url}: {exc}")
        self.stats.latencies.append(time.perf_counter() - start)
        self.stats.rpcs += 1
        if status != 200:
            return self._failed(f"RPC: HTTP {status}: {data[:200]!r}")
        try:
            reply = parse_reply(data)
        except ProtocolError as exc:
            return self._failed(f"RPC: unreadable reply: {exc}")
        self._check_reply(reply, reports)
        self.rpc_seqno += 1
        if reply.hostid:
            self.hostid = reply.hostid
        if reply.code_sign_key:
            self.code_sign_key = reply.code_sign_key
        self.not_before = self.state.now + (reply.request_delay or 0.0)
        if self.finished:  # something was not acknowledged: retry later, as BOINC's RPC backoff does
            self.not_before = max(self.not_before, self.state.now + RETRY_DELAY)
        sent = self._accept(reply)
        if choice is not None or sent:
            self.policy.handle_reply(self.state, choice or FetchChoice(PROJECT, work, "report"), sent)
        return reply

    def request(self, work: WorkRequest, reports: list[WireJob]) -> SchedulerRequest:
        """A scheduler request shaped like 7.20.5's, asking for ``work``."""
        hw, prefs, now = self.hardware, self.state.prefs, time.time()
        cpu = ProcType.CPU
        new_style = work.rsc_spec_request
        coprocs: tuple[Coproc, ...] = ()
        if hw.ngpus and new_style:  # the v4 policy describes no coprocessor
            gpu = ProcType.NVIDIA
            coprocs = (
                Coproc(
                    type=gpu,
                    count=hw.ngpus,
                    name=hw.gpu_name,
                    available_ram=hw.gpu_ram,
                    req_secs=work.req_secs.get(gpu, 0.0),
                    req_instances=work.req_instances.get(gpu, 0.0),
                    estimated_delay=work.estimated_delay.get(gpu, 0.0),
                    peak_flops=hw.gpu_flops,
                    properties=(("have_cuda", "1"), ("have_opencl", "1")),
                ),
            )
        prefs_xml = (
            f"<work_buf_min_days>{prefs.work_buf_min / 86400:f}</work_buf_min_days>"
            f"<work_buf_additional_days>{prefs.work_buf_additional / 86400:f}</work_buf_additional_days>"
        )
        return SchedulerRequest(
            authenticator=self.authenticator,
            hostid=self.hostid,
            rpc_seqno=self.rpc_seqno,
            core_client_major_version=7,
            core_client_minor_version=20,
            core_client_release=5,
            work_req_seconds=max(work.req_secs.values(), default=0.0) if new_style else work.work_req_seconds,
            cpu_req_secs=work.req_secs.get(cpu, 0.0) if new_style else None,
            cpu_req_instances=work.req_instances.get(cpu, 0.0) if new_style else None,
            estimated_delay=work.estimated_delay.get(cpu, 0.0),
            client_cap_plan_class=True,
            platform_name=PLATFORM,
            code_sign_key=self.code_sign_key,
            working_global_prefs=GlobalPrefs(
                raw=prefs_xml,
                work_buf_min_days=prefs.work_buf_min / 86400,
                work_buf_additional_days=prefs.work_buf_additional / 86400,
            ),
            time_stats=TimeStats(client_start_time=self._started, total_start_time=self._started, now=now),
            host_info=HostInfo(
                domain_name=f"emulated-{self.index:04d}",
                host_cpid=hashlib.md5(f"{self.authenticator}:{self.index}".encode()).hexdigest(),
                p_ncpus=hw.ncpus,
                p_vendor="GenuineIntel",
                p_model="Emulated CPU",
                p_fpops=hw.cpu_flops,
                p_iops=hw.cpu_flops,
                p_membw=1e9,
                m_nbytes=hw.ram,
                m_swap=hw.ram / 4,
                d_total=1e12,
                d_free=5e11,
                os_name="Linux Debian",
                os_version="12",
                n_usable_coprocs=hw.ngpus,
            ),
            coprocs=coprocs,
            results=tuple(self._reported(job) for job in reports),
            other_results=tuple(OtherResult(name=w.result_name) for w in (*self.wire.values(), *reports)),
        )

    def _reported(self, job: WireJob) -> ReportedResult:
        elapsed = round(job.elapsed, 2)
        return ReportedResult(
            name=job.result_name,
            final_cpu_time=round(elapsed * 0.97, 2),
            final_elapsed_time=elapsed,
            exit_status=0,
            state=RESULT_FILES_UPLOADED,
            platform=PLATFORM,
            version_num=job.version_num,
            plan_class=job.plan_class,
            app_version_num=job.version_num,
            core_client_version="7.20.5",
            stderr_out="<stderr_txt>\nemulated task finished\n</stderr_txt>",
            files=tuple(
                ReportedFile(
                    name=info.name,
                    nbytes=float(len(_content(job.result_name, info))),
                    max_nbytes=info.max_nbytes or 0.0,
                    md5_cksum=OutputFile(info, _content(job.result_name, info)).md5,
                )
                for info in job.outputs
            ),
        )

    def _check_reply(self, reply: SchedulerReply, reports: list[WireJob]) -> None:
        acked = set(reply.result_acks)
        self.stats.results_reported += len(reports)
        self.stats.results_acked += sum(1 for job in reports if job.result_name in acked)
        missing = [job.result_name for job in reports if job.result_name not in acked]
        if missing:
            self.stats.errors.append(f"not acknowledged: {', '.join(missing[:5])}")
        # Acknowledged results are done; the others are reported again next time, as BOINC does.
        self.finished = [(t, job) for t, job in self.finished if job.result_name not in acked]
        if reply.project_is_down:
            self.stats.errors.append("the server says the project is down")
        for message in reply.messages:
            text = message.text.lower()
            if "authenticator" in text or "server error" in text or "bad scheduler request" in text:
                self.stats.errors.append(f"server message: {message.text}")

    def _failed(self, error: str) -> None:
        self.stats.errors.append(error)
        self.not_before = self.state.now + RETRY_DELAY
        return None

    def _accept(self, reply: SchedulerReply) -> tuple[SentJob, ...]:
        """Queue the reply's jobs; return them as the policy's ``SentJob`` values."""
        workunits = {wu.name: wu for wu in reply.workunits}
        versions = {(v.app_name, v.version_num, v.plan_class): v for v in reply.app_versions}
        infos = {info.name: info for info in reply.file_infos}
        sent = []
        for result in reply.results:
            wu = workunits.get(result.wu_name)
            if wu is None:
                self.stats.errors.append(f"{result.name}: the reply has no workunit {result.wu_name}")
                continue
            version = versions.get(
                (wu.app_name, result.version_num or wu.version_num or 0, result.plan_class)
            )
            if version is None:
                self.stats.errors.append(f"{result.name}: the reply has no matching app version")
                continue
            gpu = next((c for c in version.coprocs if c.count > 0), None)
            proc = gpu.type if gpu is not None else ProcType.CPU
            usage = gpu.count if gpu is not None else (version.avg_ncpus or 1.0)
            if self.state.ninstances(proc) == 0:
                self.stats.errors.append(f"{result.name}: sent for a {proc.value} this host lacks")
                continue
            flops = version.flops or self.hardware.cpu_flops * usage
            fpops_est = wu.rsc_fpops_est or 3.6e12
            deadline = self.state.now + max(result.report_deadline - time.time(), 0.0)
            job = SentJob(
                app=wu.app_name,
                proc_type=proc,
                usage=min(usage, float(self.state.ninstances(proc))),
                fpops=fpops_est * self.rng.uniform(0.8, 1.2),
                fpops_est=fpops_est,
                deadline=deadline,
            )
            self._next_key += 1
            self.state.add_job(
                SimJob(
                    key=self._next_key,
                    project=PROJECT,
                    app=job.app,
                    proc_type=proc,
                    usage=job.usage,
                    fpops=job.fpops,
                    fpops_est=fpops_est,
                    flops=flops,
                    deadline=deadline,
                    received=self.state.now,
                )
            )
            outputs = tuple(
                infos[ref.file_name]
                for ref in result.file_refs
                if ref.file_name in infos and infos[ref.file_name].is_upload
            )
            self.wire[self._next_key] = WireJob(
                result.name, result.version_num or version.version_num, result.plan_class, outputs
            )
            sent.append(job)
        self.stats.jobs_received += len(sent)
        self.stats.received.extend(w.result_name for w in list(self.wire.values())[-len(sent) :] if sent)
        return tuple(sent)

    def _upload_outputs(self, job: WireJob) -> None:
        for info in job.outputs:
            error = upload(self.session, self.gate, OutputFile(info, _content(job.result_name, info)))
            if error:
                self.stats.errors.append(error)
            elif self.gate.enabled:
                self.stats.uploads += 1


def _content(result_name: str, info: FileInfoDesc) -> bytes:
    """The output a job writes: deterministic text, within the file's max_nbytes."""
    text = f"{result_name} {info.name} emulated output\n".encode() * 8
    limit = int(info.max_nbytes or len(text))
    return text[: max(limit, 1)]
