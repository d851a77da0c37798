"""What every live host sends and checks, whatever it simulates in between.

``LiveHost`` (host.py, the client policies) and ``LeanHost`` (lean.py, the cheap load
generator) are ``WireHost``s: they keep the same ids, build their scheduler requests,
report their results and read the jobs of a reply through this module, so both speak the
same 7.20.5-shaped protocol and check the server the same way.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict, Unpack

from apps.core.domain.resources import ProcType
from apps.emulator.domain.backoff import TRANSFER_GIVEUP, transfer_retry_delay
from apps.emulator.domain.model import ClientPrefs, HostSpec, ResourceSpec
from apps.emulator.domain.server import WorkRequest
from apps.emulator.live.wire import OutputFile, Session, UploadGate, upload_file
from apps.protocol import (
    AppVersionDesc,
    Coproc,
    FileInfoDesc,
    GlobalPrefs,
    HostInfo,
    OtherResult,
    ProtocolError,
    ReportedFile,
    ReportedResult,
    ResultDesc,
    SchedulerReply,
    SchedulerRequest,
    TimeStats,
    WorkunitDesc,
    parse_reply,
    render_request,
)
from apps.scheduler.admission import BUSY_MESSAGE

PLATFORM = "x86_64-pc-linux-gnu"
RESULT_FILES_UPLOADED = 5  # BOINC's result state for a finished, uploaded task
RESULT_UPLOAD_FAILED = 7  # ... and for one whose upload the server refused
XML_FORM = "application/x-www-form-urlencoded"  # what the stock client labels its XML with
DEFAULT_FPOPS_EST = 3.6e12  # a workunit that gives no size: an hour at 1 GFLOPS


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

    rpcs: int = 0  # RPCs answered (any HTTP status)
    rpcs_sent: int = 0  # RPCs sent, answered or not
    latencies: list[float] = field(default_factory=list)
    jobs_received: int = 0
    results_reported: int = 0
    results_acked: int = 0
    uploads: int = 0
    errors: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)  # result names, to find double dispatch
    acked: list[str] = field(default_factory=list)  # reports the server acknowledged, by name
    busy: int = 0  # replies that said the server is busy (load shedding)
    error_kinds: dict[str, int] = field(default_factory=dict)  # ``errors`` counted by kind

    def error(self, kind: str, text: str) -> None:
        """Record a client-visible error: its text, and one more of its kind."""
        self.errors.append(text)
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1


@dataclass(slots=True)
class WireJob:
    """What the reply said about a job that a host needs to report it."""

    result_name: str
    version_num: int
    plan_class: str
    outputs: tuple[FileInfoDesc, ...]
    elapsed: float = 0.0
    wu_name: str = ""  # the job's input: replicas of one workunit write the same outputs
    stored: set[str] = field(default_factory=set)  # output files the server has stored
    upload_refused: bool = False  # an upload was refused for good: the task failed
    upload_failures: int = 0  # transient upload failures so far
    upload_first_failure: float = 0.0  # simulated time of the first of them
    upload_retry_at: float = 0.0  # simulated time before which the uploads are not tried again


@dataclass(frozen=True, slots=True)
class ReplyJob:
    """A job of a reply with its workunit, app version, resource and output files."""

    result: ResultDesc
    workunit: WorkunitDesc
    version: AppVersionDesc
    proc_type: ProcType
    usage: float  # instances of ``proc_type`` the job occupies
    outputs: tuple[FileInfoDesc, ...]

    @property
    def fpops_est(self) -> float:
        return self.workunit.rsc_fpops_est or DEFAULT_FPOPS_EST

    def wire(self) -> WireJob:
        return WireJob(
            self.result.name,
            self.result.version_num or self.version.version_num,
            self.result.plan_class,
            self.outputs,
            wu_name=self.result.wu_name,
        )


def scheduler_request(
    *,
    hardware: HostHardware,
    index: int,
    authenticator: str,
    hostid: int,
    rpc_seqno: int,
    code_sign_key: str,
    prefs: ClientPrefs,
    started: float,
    now: float,
    work: WorkRequest,
    reports: Sequence[WireJob],
    in_progress: Iterable[str],
) -> SchedulerRequest:
    """A scheduler request shaped like 7.20.5's, asking for ``work``.

    ``reports`` are the finished jobs; ``in_progress`` names every job the host still
    holds (``other_results``), which lets the server resend lost ones.
    """
    hw, cpu = hardware, ProcType.CPU
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
        authenticator=authenticator,
        hostid=hostid,
        rpc_seqno=rpc_seqno,
        core_client_major_version=7,
        core_client_minor_version=20,
        core_client_release=5,
        work_req_seconds=max(work.req_secs.values(), default=0.0) if new_style else work.work_req_seconds,
        cpu_req_secs=work.req_secs.get(cpu, 0.0) if new_style else None,
        cpu_req_instances=work.req_instances.get(cpu, 0.0) if new_style else None,
        estimated_delay=work.estimated_delay.get(cpu, 0.0),
        client_cap_plan_class=True,
        platform_name=PLATFORM,
        code_sign_key=code_sign_key,
        working_global_prefs=GlobalPrefs(
            raw=prefs_xml,
            work_buf_min_days=prefs.work_buf_min / 86400,
            work_buf_additional_days=prefs.work_buf_additional / 86400,
        ),
        time_stats=TimeStats(client_start_time=started, total_start_time=started, now=now),
        host_info=_host_info(hw, index, authenticator),
        coprocs=coprocs,
        results=tuple(reported_result(job) for job in reports),
        other_results=tuple(OtherResult(name=name) for name in in_progress),
    )


@functools.lru_cache(maxsize=4096)
def _host_info(hw: HostHardware, index: int, authenticator: str) -> HostInfo:
    """The same for every RPC of a host: made once (the load generator makes thousands)."""
    return HostInfo(
        domain_name=f"emulated-{index:04d}",
        host_cpid=hashlib.md5(f"{authenticator}:{index}".encode()).hexdigest(),
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
    )


def reported_result(job: WireJob) -> ReportedResult:
    """A finished, uploaded job as the client reports it, with its output files' checksums."""
    elapsed = round(job.elapsed, 2)
    return ReportedResult(
        name=job.result_name,
        final_cpu_time=round(elapsed * 0.97, 2),
        final_elapsed_time=elapsed,
        exit_status=0,
        state=RESULT_UPLOAD_FAILED if job.upload_refused else RESULT_FILES_UPLOADED,
        platform=PLATFORM,
        version_num=job.version_num,
        plan_class=job.plan_class,
        app_version_num=job.version_num,
        core_client_version="7.20.5",
        stderr_out="<stderr_txt>\nemulated task finished\n</stderr_txt>",
        files=tuple(
            ReportedFile(
                name=info.name,
                nbytes=float(len(output_content(job, index))),
                max_nbytes=info.max_nbytes or 0.0,
                md5_cksum=OutputFile(info, output_content(job, index)).md5,
            )
            for index, info in enumerate(job.outputs)
        ),
    )


def output_content(job: WireJob, index: int) -> bytes:
    """What the job writes into its ``index``-th output file: text that depends only on the
    workunit, as a deterministic app's output does, so replicas agree (a bitwise validator
    finds them equal); within the file's max_nbytes."""
    source = job.wu_name or job.result_name
    text = f"{source} output {index}: emulated result\n".encode() * 8
    limit = int(job.outputs[index].max_nbytes or len(text))
    return text[: max(limit, 1)]


def check_reply(stats: HostStats, reply: SchedulerReply, reports: Sequence[WireJob]) -> frozenset[str]:
    """Count the acknowledged reports and note what is wrong; return the acknowledged names.

    A report the server did not acknowledge, a project that says it is down and a message
    about a bad request or a server error are errors of the run. A "server is busy" reply
    (load shedding) is counted apart: it handled nothing, so the reports go again later. A
    "project is down" reply handled nothing either: it is one error, whatever it reports.
    """
    if is_busy(reply):
        stats.busy += 1
        return frozenset()
    if reply.project_is_down:
        stats.error("rpc: project is down", "the server says the project is down")
        return frozenset()
    acked = frozenset(reply.result_acks)
    stats.results_reported += len(reports)
    stats.results_acked += sum(1 for job in reports if job.result_name in acked)
    stats.acked.extend(job.result_name for job in reports if job.result_name in acked)
    missing = [job.result_name for job in reports if job.result_name not in acked]
    if missing:
        stats.error("rpc: report not acknowledged", f"not acknowledged: {', '.join(missing[:5])}")
    for message in reply.messages:
        text = message.text.lower()
        if "authenticator" in text or "server error" in text or "bad scheduler request" in text:
            stats.error("rpc: server error message", f"server message: {message.text}")
    return acked


def is_busy(reply: SchedulerReply) -> bool:
    """Whether the scheduler turned the RPC away because it was saturated."""
    return any(message.text == BUSY_MESSAGE for message in reply.messages)


def reply_jobs(reply: SchedulerReply, stats: HostStats) -> list[ReplyJob]:
    """The reply's jobs, each with its workunit and app version; a job lacking one is an error."""
    workunits = {wu.name: wu for wu in reply.workunits}
    versions = {(v.app_name, v.version_num, v.plan_class): v for v in reply.app_versions}
    infos = {info.name: info for info in reply.file_infos}
    jobs = []
    for result in reply.results:
        wu = workunits.get(result.wu_name)
        if wu is None:
            stats.error("rpc: incomplete reply", f"{result.name}: the reply has no workunit {result.wu_name}")
            continue
        version = versions.get((wu.app_name, result.version_num or wu.version_num or 0, result.plan_class))
        if version is None:
            stats.error("rpc: incomplete reply", f"{result.name}: the reply has no matching app version")
            continue
        gpu = next((c for c in version.coprocs if c.count > 0), None)
        outputs = tuple(
            infos[ref.file_name]
            for ref in result.file_refs
            if ref.file_name in infos and infos[ref.file_name].is_upload
        )
        jobs.append(
            ReplyJob(
                result=result,
                workunit=wu,
                version=version,
                proc_type=gpu.type if gpu is not None else ProcType.CPU,
                usage=gpu.count if gpu is not None else (version.avg_ncpus or 1.0),
                outputs=outputs,
            )
        )
    return jobs


class RpcFailed(Exception):
    """An RPC that got no usable reply (connection, HTTP status or XML); the message says
    which, ``kind`` names the failure for counting."""

    def __init__(self, message: str, kind: str = "rpc: failed") -> None:
        super().__init__(message)
        self.kind = kind


class HostIdentity(TypedDict):
    """What a ``WireHost`` is made from: which host it is and how it reaches the server."""

    index: int
    hardware: HostHardware
    master_url: str
    authenticator: str
    session: Session
    gate: UploadGate
    seed: NotRequired[int]


class WireHost:
    """One emulated host's ids for its project and its side of the scheduler RPC.

    Subclasses decide when to call and what to ask for; this keeps what the server
    identifies the host by (host id, RPC sequence number, code-signing key), sends a
    request, records its latency and reads the reply.
    """

    def __init__(self, **identity: Unpack[HostIdentity]) -> None:
        self.index = identity["index"]
        self.hardware = identity["hardware"]
        self.scheduler_url = identity["master_url"].rstrip("/") + "/cgi"
        self.authenticator = identity["authenticator"]
        self.session = identity["session"]
        self.gate = identity["gate"]
        self.seed = identity.get("seed", 1)
        self.rng = random.Random(f"{self.seed}:{self.index}")
        # Apart, so failed uploads leave the jobs' runtimes drawn from self.rng unchanged.
        self.upload_rng = random.Random(f"{self.seed}:{self.index}:uploads")
        self.hostid = 0
        self.rpc_seqno = 0
        self.code_sign_key = ""
        self.stats = HostStats()
        self._started = time.time()

    def build_request(
        self,
        *,
        prefs: ClientPrefs,
        work: WorkRequest,
        reports: Sequence[WireJob],
        in_progress: Iterable[str],
    ) -> SchedulerRequest:
        """A request shaped like 7.20.5's from this host, asking for ``work``."""
        return scheduler_request(
            hardware=self.hardware,
            index=self.index,
            authenticator=self.authenticator,
            hostid=self.hostid,
            rpc_seqno=self.rpc_seqno,
            code_sign_key=self.code_sign_key,
            prefs=prefs,
            started=self._started,
            now=time.time(),
            work=work,
            reports=reports,
            in_progress=in_progress,
        )

    def exchange(self, request: SchedulerRequest) -> SchedulerReply:
        """POST ``request`` and read the reply; the host takes the ids it gives.

        Raises RpcFailed (and counts nothing but the latency of an answered RPC) when
        there is no usable reply.
        """
        body = render_request(request)
        start = time.perf_counter()
        self.stats.rpcs_sent += 1
        try:
            status, data = self.session.request("POST", self.scheduler_url, body, content_type=XML_FORM)
        except (OSError, http.client.HTTPException) as exc:
            raise RpcFailed(f"RPC to {self.scheduler_url}: {exc}", "rpc: connection failed") from None
        self.stats.latencies.append(time.perf_counter() - start)
        self.stats.rpcs += 1
        if status != 200:
            raise RpcFailed(f"RPC: HTTP {status}: {data[:200]!r}", f"rpc: HTTP {status}")
        try:
            reply = parse_reply(data)
        except ProtocolError as exc:
            raise RpcFailed(f"RPC: unreadable reply: {exc}", "rpc: unreadable reply") from None
        self.rpc_seqno += 1
        if reply.hostid:
            self.hostid = reply.hostid
        if reply.code_sign_key:
            self.code_sign_key = reply.code_sign_key
        return reply

    def upload_outputs(self, job: WireJob, now: float) -> bool:
        """Upload the finished job's output files not stored yet, unless a failure's backoff
        runs until after ``now`` (simulated seconds); whether it is ready to report: every
        file stored, or one refused for good.

        As the client does: a transient failure (no connection, an HTTP error, "try later")
        is counted once and tried again after an exponential, randomised backoff (the
        client keeps one per file; a job's files go together here); after
        ``TRANSFER_GIVEUP`` of failures the upload fails for good. A permanent refusal
        fails it at once. A failed upload makes the job a failed one, reported as such.
        """
        if job.upload_refused:
            return True
        if now < job.upload_retry_at:
            return False
        failed = False
        for index, info in enumerate(job.outputs):
            if info.name in job.stored or job.upload_refused:
                continue
            attempt = upload_file(self.session, self.gate, OutputFile(info, output_content(job, index)))
            if attempt.error is None:
                job.stored.add(info.name)
                if self.gate.enabled:
                    self.stats.uploads += 1
                continue
            self.stats.error(attempt.kind, attempt.error)
            job.upload_refused = attempt.permanent
            failed = True
        if job.upload_refused or not failed:
            return True
        if not job.upload_failures:
            job.upload_first_failure = now
        job.upload_failures += 1
        if now - job.upload_first_failure >= TRANSFER_GIVEUP:
            self.stats.error(
                "upload: gave up", f"{job.result_name}: uploads failed for {TRANSFER_GIVEUP:.0f} s"
            )
            job.upload_refused = True
            return True
        job.upload_retry_at = now + transfer_retry_delay(job.upload_failures, self.upload_rng.random())
        return False
