"""The scheduler request as frozen dataclasses (what a 7.20.5 client sends; docs/protocol.md).

Field order is the order the client writes; ranges are the sane ranges the parser
enforces (values outside them are refused, except request seconds, which are clamped to
[0, 28 days] as BOINC's WORK_REQ does). ``SchedulerRequest.work_request`` derives the
per-resource work request (see ``work_request``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from apps.core.domain.resources import ProcType
from apps.protocol.numbers import INT32_MAX, MAX_REQ_SECS, MAX_TIME
from apps.protocol.schema import (
    FloatRange,
    IntRange,
    custom_meta,
    node_meta,
    s_bool,
    s_custom,
    s_float,
    s_int,
    s_nodes,
    s_str,
    s_strs,
)
from apps.protocol.work_request import ResourceRequest, WorkRequest

_FRAC: FloatRange = {"lo": 0.0, "hi": 1.0}
# The client divides the project's share by the share of projects with runnable work
# (cs_scheduler.cpp), so a project that has none yet sees values above 1: read leniently.
_SHARE_FRAC: FloatRange = {"lo": 0.0, "hi": 1e6, "clamp": True}
_TIME: FloatRange = {"lo": 0.0, "hi": MAX_TIME}
_SPEED: FloatRange = {"lo": 0.0, "hi": 1e14}
_REQ: FloatRange = {"lo": 0.0, "hi": MAX_REQ_SECS, "clamp": True}
_DELAY: FloatRange = {"lo": 0.0, "hi": 1e10, "clamp": True}
_ID: IntRange = {"lo": 0, "hi": INT32_MAX}


@dataclass(frozen=True, slots=True)
class TimeStats:
    on_frac: float = s_float(1.0, **_FRAC)
    connected_frac: float = s_float(1.0, lo=-1.0, hi=1.0)  # -1 = unknown
    cpu_and_network_available_frac: float = s_float(1.0, **_FRAC)
    active_frac: float = s_float(1.0, **_FRAC)
    gpu_active_frac: float = s_float(1.0, **_FRAC)
    client_start_time: float = s_float(0.0, **_TIME)
    total_start_time: float = s_float(0.0, **_TIME)
    total_duration: float = s_float(0.0, **_TIME)
    total_active_duration: float = s_float(0.0, **_TIME)
    total_gpu_active_duration: float = s_float(0.0, **_TIME)
    now: float = s_float(0.0, **_TIME)
    previous_uptime: float = s_float(0.0, **_TIME)
    session_active_duration: float = s_float(0.0, **_TIME)
    session_gpu_active_duration: float = s_float(0.0, **_TIME)


@dataclass(frozen=True, slots=True)
class NetStats:
    bwup: float = s_float(0.0, hi=1e13)
    avg_up: float = s_float(0.0, hi=1e13)
    avg_time_up: float = s_float(0.0, **_TIME)
    bwdown: float = s_float(0.0, hi=1e13)
    avg_down: float = s_float(0.0, hi=1e13)
    avg_time_down: float = s_float(0.0, **_TIME)


@dataclass(frozen=True, slots=True)
class HostInfo:
    timezone: int = s_int(0, lo=-86400, hi=86400)
    domain_name: str = s_str()
    ip_addr: str = s_str()
    host_cpid: str = s_str()
    p_ncpus: int = s_int(0, lo=0, hi=1_000_000)
    p_vendor: str = s_str()
    p_model: str = s_str()
    p_features: str = s_str()
    p_fpops: float = s_float(0.0, **_SPEED)
    p_iops: float = s_float(0.0, **_SPEED)
    p_membw: float = s_float(0.0, **_SPEED)
    p_calculated: float = s_float(0.0, **_TIME)
    p_vm_extensions_disabled: bool = s_bool(emit="01")
    m_nbytes: float = s_float(0.0, hi=1e16)
    m_cache: float = s_float(0.0, hi=1e13)
    m_swap: float = s_float(0.0, hi=1e16)
    d_total: float = s_float(0.0)
    d_free: float = s_float(0.0)
    os_name: str = s_str()
    os_version: str = s_str()
    n_usable_coprocs: int = s_int(0, lo=0, hi=10_000)
    wsl_available: bool = s_bool(emit="01")
    product_name: str = s_str(emit="nonempty")
    virtualbox_version: str = s_str(emit="nonempty")


@dataclass(frozen=True, slots=True)
class DiskUsage:
    d_boinc_used_total: float = s_float(0.0)
    d_boinc_used_project: float = s_float(0.0)
    d_project_share: float = s_float(0.0)


@dataclass(frozen=True, slots=True)
class GlobalPrefs:
    """The scheduling-relevant part of a ``<global_preferences>`` block, plus the block.

    ``raw`` is the block's content as XML text (canonical lxml serialization); the other
    fields are read from its top level and clamped to their ranges, as the client does.
    """

    raw: str = s_custom("")
    mod_time: float = s_float(0.0, lo=0.0, hi=MAX_TIME, clamp=True)
    source_project: str = s_str()
    max_ncpus_pct: float = s_float(100.0, lo=0.0, hi=100.0, clamp=True)
    cpu_usage_limit: float = s_float(100.0, lo=0.0, hi=100.0, clamp=True)
    work_buf_min_days: float = s_float(0.1, lo=0.0, hi=1000.0, clamp=True)
    work_buf_additional_days: float = s_float(0.5, lo=0.0, hi=1000.0, clamp=True)
    disk_max_used_gb: float = s_float(0.0, lo=0.0, hi=1e9, clamp=True)
    disk_max_used_pct: float = s_float(90.0, lo=0.0, hi=100.0, clamp=True)
    disk_min_free_gb: float = s_float(0.0, lo=0.0, hi=1e9, clamp=True)
    ram_max_used_busy_pct: float = s_float(50.0, lo=0.0, hi=100.0, clamp=True)
    ram_max_used_idle_pct: float = s_float(90.0, lo=0.0, hi=100.0, clamp=True)


@dataclass(frozen=True, slots=True)
class Coproc:
    """One GPU type of the host (``<coproc_cuda>`` etc.) with its work request.

    ``req_secs``/``req_instances`` are None when the client did not send them.
    ``properties`` keeps the other leaf elements (have_cuda, cudaVersion, drvVersion, ...)
    as (tag, text) pairs in document order, and ``opencl`` the leaves of the nested
    ``<coproc_opencl>`` block, for plan-class checks.
    """

    type: ProcType = field(default=ProcType.NVIDIA, metadata=custom_meta())
    count: int = s_int(0, lo=0, hi=4096)
    name: str = s_str()
    available_ram: float = s_float(0.0, hi=1e16)
    req_secs: float | None = s_float(None, **_REQ)
    req_instances: float | None = s_float(None, **_REQ)
    estimated_delay: float = s_float(0.0, **_DELAY)
    peak_flops: float = s_float(0.0, hi=1e18)
    properties: tuple[tuple[str, str], ...] = s_custom(())
    opencl: tuple[tuple[str, str], ...] = s_custom(())

    def property(self, tag: str) -> str | None:
        """The text of a reported property (last one wins), e.g. ``cudaVersion``."""
        found = [text for name, text in self.properties if name == tag]
        return found[-1] if found else None


@dataclass(frozen=True, slots=True)
class ReportedFile:
    """An uploaded output file listed in a reported ``<result>``."""

    name: str = s_str(required=True)
    nbytes: float = s_float(0.0, hi=1e15)
    max_nbytes: float = s_float(0.0, hi=1e15)
    md5_cksum: str = s_str()
    upload_url: str = s_str(emit="nonempty")


@dataclass(frozen=True, slots=True)
class ReportedResult:
    """A completed task being reported. ``stderr_out`` is the CDATA text."""

    name: str = s_str(required=True)
    final_cpu_time: float = s_float(0.0, hi=1e10)
    final_elapsed_time: float = s_float(0.0, hi=1e10)
    exit_status: int = s_int(0, lo=-(2**31), hi=2**32 - 1)
    state: int = s_int(0, lo=0, hi=31)
    platform: str = s_str()
    version_num: int = s_int(0, **_ID)
    plan_class: str = s_str(emit="nonempty")
    fpops_per_cpu_sec: float = s_float(0.0, hi=1e20, emit="nonzero")
    fpops_cumulative: float = s_float(0.0, hi=1e30, emit="nonzero")
    intops_per_cpu_sec: float = s_float(0.0, hi=1e20, emit="nonzero")
    intops_cumulative: float = s_float(0.0, hi=1e30, emit="nonzero")
    final_peak_working_set_size: float = s_float(0.0, emit="nonzero")
    final_peak_swap_size: float = s_float(0.0, emit="nonzero")
    final_peak_disk_usage: float = s_float(0.0, emit="nonzero")
    final_bytes_sent: float = s_float(0.0, emit="nonzero")
    final_bytes_received: float = s_float(0.0, emit="nonzero")
    app_version_num: int = s_int(0, **_ID)
    core_client_version: str = s_custom("")
    stderr_out: str = s_custom("")
    files: tuple[ReportedFile, ...] = s_nodes(ReportedFile, tag="file_info")


@dataclass(frozen=True, slots=True)
class TrickleUp:
    """A ``<msg_from_host>``; ``body`` is its XML content, ``variety`` read from it.

    ``problem`` says why a body that was not XML was set aside (then ``body`` is empty)."""

    result_name: str = s_str()
    time: int = s_int(0, lo=0, hi=int(MAX_TIME))
    variety: str = s_custom("")
    body: str = s_custom("")
    problem: str = s_custom("")


@dataclass(frozen=True, slots=True)
class StickyFile:
    """A sticky file the host holds for this project (locality scheduling)."""

    name: str = s_str(required=True)
    nbytes: float = s_float(0.0, hi=1e15)
    status: int = s_int(0)


@dataclass(frozen=True, slots=True)
class CoprocUsage:
    """``<coproc><type/><count/></coproc>`` of an app version: GPU instances per job."""

    type: ProcType = field(default=ProcType.NVIDIA, metadata=custom_meta())
    count: float = s_float(1.0, hi=1024.0)


@dataclass(frozen=True, slots=True)
class ClientAppVersion:
    """An app version the client holds (``<app_versions>``; the menu for anonymous platform)."""

    app_name: str = s_str(required=True)
    version_num: int = s_int(0, **_ID)
    platform: str = s_str()
    avg_ncpus: float = s_float(1.0, hi=1e6)
    max_ncpus: float = s_float(1.0, hi=1e6)
    flops: float = s_float(0.0, hi=1e18)
    plan_class: str = s_str(emit="nonempty")
    api_version: str = s_str(emit="nonempty")
    cmdline: str = s_str(emit="nonempty")
    file_prefix: str = s_str(emit="nonempty")
    coprocs: tuple[CoprocUsage, ...] = s_nodes(CoprocUsage, tag="coproc")
    gpu_ram: float = s_float(0.0, hi=1e16, emit="nonzero")
    dont_throttle: bool = s_bool()
    needs_network: bool = s_bool()


@dataclass(frozen=True, slots=True)
class OtherResult:
    """A task on the host that is not being reported; ``app_version`` indexes app_versions."""

    name: str = s_str(required=True)
    app_version: int = s_int(-1, lo=-1, hi=1_000_000)
    plan_class: str = s_str(emit="nonempty")


@dataclass(frozen=True, slots=True)
class InProgressResult:
    """An ``<ip_result>`` (sent only after the server asked with send_full_workload)."""

    name: str = s_str(required=True)
    report_deadline: float = s_float(0.0, **_TIME, fmt=".0f")
    time_remaining: float = s_float(0.0, hi=1e10, fmt=".2f")
    avg_ncpus: float = s_float(1.0, hi=1e6)
    ncudas: float = s_float(0.0, hi=1024.0, emit="nonzero")
    natis: float = s_float(0.0, hi=1024.0, emit="nonzero")
    nintel_gpus: float = s_float(0.0, hi=1024.0, emit="nonzero")


ANONYMOUS_PLATFORM = "anonymous"


@dataclass(frozen=True, slots=True)
class SchedulerRequest:
    """A ``<scheduler_request>``. Absent sub-blocks take the defaults shown.

    ``other_results``/``in_progress_results`` are None when the client did not send the
    list at all (which is different from an empty list). ``work_sequences`` is the
    Cobblestone extension: None from a stock client, else the sequences the client
    believes it holds.
    """

    authenticator: str = s_str()
    hostid: int = s_int(0, **_ID)
    rpc_seqno: int = s_int(0, **_ID)
    core_client_major_version: int = s_int(0, lo=0, hi=1000)
    core_client_minor_version: int = s_int(0, lo=0, hi=1000)
    core_client_release: int = s_int(0, lo=0, hi=100_000)
    resource_share_fraction: float = s_float(1.0, **_SHARE_FRAC)
    rrs_fraction: float = s_float(1.0, **_SHARE_FRAC)
    prrs_fraction: float = s_float(1.0, **_SHARE_FRAC)
    duration_correction_factor: float = s_float(1.0, hi=1e4)
    allow_multiple_clients: bool = s_bool(emit="01")
    sandbox: bool = s_bool(emit="01")
    dont_send_work: bool = s_bool(emit="01")
    work_req_seconds: float = s_float(0.0, **_REQ)
    cpu_req_secs: float | None = s_float(None, **_REQ)
    cpu_req_instances: float | None = s_float(None, **_REQ)
    estimated_delay: float = s_float(0.0, **_DELAY)
    client_cap_plan_class: bool = s_bool(emit="01")
    platform_name: str = s_str()
    alt_platforms: tuple[str, ...] = s_strs(tag="alt_platform", sub="name")
    code_sign_key: str = s_str(emit="nonempty", fmt="block")
    working_global_prefs: GlobalPrefs | None = field(default=None, metadata=custom_meta())
    global_prefs: GlobalPrefs | None = field(default=None, metadata=custom_meta())
    global_prefs_source_email_hash: str = s_str(emit="nonempty")
    cross_project_id: str = s_str()
    time_stats: TimeStats = field(default=TimeStats(), metadata=node_meta(TimeStats))
    net_stats: NetStats = field(default=NetStats(), metadata=node_meta(NetStats))
    host_info: HostInfo = field(default=HostInfo(), metadata=node_meta(HostInfo))
    disk_usage: DiskUsage = field(default=DiskUsage(), metadata=node_meta(DiskUsage))
    coprocs: tuple[Coproc, ...] = s_custom(())
    results: tuple[ReportedResult, ...] = s_nodes(ReportedResult, tag="result")
    trickle_ups: tuple[TrickleUp, ...] = s_nodes(TrickleUp, tag="msg_from_host")
    sticky_files: tuple[StickyFile, ...] = s_nodes(StickyFile, tag="file_info")
    app_versions: tuple[ClientAppVersion, ...] = s_nodes(
        ClientAppVersion, tag="app_version", wrapper="app_versions"
    )
    other_results: tuple[OtherResult, ...] | None = s_nodes(
        OtherResult, tag="other_result", wrapper="other_results", optional=True
    )
    in_progress_results: tuple[InProgressResult, ...] | None = s_nodes(
        InProgressResult, tag="ip_result", wrapper="in_progress_results", optional=True
    )
    client_brand: str = s_str(emit="nonempty")
    work_sequences: tuple[str, ...] | None = s_strs(
        tag="work_sequence", sub="name", wrapper="work_sequences", optional=True
    )

    @property
    def client_version(self) -> int:
        """major*10000 + minor*100 + release, the form min_client_version uses."""
        return (
            self.core_client_major_version * 10000
            + self.core_client_minor_version * 100
            + self.core_client_release
        )

    @property
    def is_anonymous_platform(self) -> bool:
        return self.platform_name == ANONYMOUS_PLATFORM

    @property
    def platforms(self) -> tuple[str, ...]:
        """The primary platform, then the alternatives, without blanks or repeats."""
        return tuple(dict.fromkeys(p for p in (self.platform_name, *self.alt_platforms) if p))

    def coproc(self, proc_type: ProcType) -> Coproc | None:
        for coproc in self.coprocs:
            if coproc.type is proc_type:
                return coproc
        return None

    def app_version_of(self, other: OtherResult) -> ClientAppVersion | None:
        """The ``<app_versions>`` entry an other_result points at, if the index is valid."""
        if 0 <= other.app_version < len(self.app_versions):
            return self.app_versions[other.app_version]
        return None

    @property
    def work_request(self) -> WorkRequest:
        coprocs = {c.type: c for c in reversed(self.coprocs)}  # first of each type wins
        new_style = self.cpu_req_secs is not None or self.cpu_req_instances is not None
        resources = [
            ResourceRequest(
                ProcType.CPU, self.cpu_req_secs or 0.0, self.cpu_req_instances or 0.0, self.estimated_delay
            )
        ]
        for coproc in self.coprocs:
            if coprocs.get(coproc.type) is not coproc:
                continue
            new_style = new_style or coproc.req_secs is not None or coproc.req_instances is not None
            resources.append(
                ResourceRequest(
                    coproc.type, coproc.req_secs or 0.0, coproc.req_instances or 0.0, coproc.estimated_delay
                )
            )
        return WorkRequest(new_style, self.work_req_seconds, tuple(resources))
