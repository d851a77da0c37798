"""What to send: the scheduler's per-resource work request rules (docs/protocol.md).

Pure functions and a small mutable request-state object; the service feeds them numbers
read from the request and the database and applies the decisions.

BOINC's per-resource rules, as implemented here:
* a request is new-style (``rsc_spec_request``) when it carries per-resource fields;
  then a job of a resource type is sent only if that type's request is non-zero;
* ``work_needed()`` is true while some resource still needs seconds or instances (and
  the per-RPC job cap is not reached); an old-style request uses ``work_req_seconds``;
* each job sent decrements its own resource's request by est. runtime × usage and by its
  instance usage (a GPU job does not decrement the CPU request, as BOINC);
* when choosing an app version, only versions whose resource still needs work are
  considered, and the fastest wins; so a GPU version first chosen is dropped as soon as
  no more GPU work is needed and another version is chosen instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from apps.core.domain.resources import ProcType


@dataclass(slots=True)
class ResourceNeed:
    """The remaining request for one resource type within one scheduler RPC."""

    proc_type: ProcType
    req_secs: float
    req_instances: float
    estimated_delay: float
    ninstances: float  # CPUs, or GPUs of this type, on the host
    available_frac: float  # fraction of time the host computes on this resource


@dataclass(slots=True)
class WorkNeed:
    """BOINC's WORK_REQ: what is still wanted, decremented as jobs are added to the reply."""

    rsc_spec_request: bool
    seconds_to_fill: float  # legacy work_req_seconds
    resources: dict[ProcType, ResourceNeed]
    max_jobs: int
    disallowed: frozenset[ProcType] = frozenset()  # user prefs (no_gpus, no_cpu)
    njobs_sent: int = 0

    def needs(self, proc_type: ProcType) -> bool:
        """Is more work of this resource type wanted (the per-type rule)?"""
        if proc_type in self.disallowed:
            return False
        resource = self.resources.get(proc_type)
        if resource is None:
            return False
        if self.rsc_spec_request:
            return resource.req_secs > 0 or resource.req_instances > 0
        return self.seconds_to_fill > 0

    def work_needed(self) -> bool:
        if self.njobs_sent >= self.max_jobs:
            return False
        return any(self.needs(p) for p in self.resources)

    def needed_types(self) -> tuple[ProcType, ...]:
        return tuple(p for p in self.resources if self.needs(p))

    def record_job(self, *, proc_type: ProcType, est_dur: float, avg_ncpus: float, gpu_usage: float) -> None:
        """Decrement the request by one job (BOINC's add_result_to_reply)."""
        self.njobs_sent += 1
        self.seconds_to_fill -= est_dur
        resource = self.resources.get(proc_type)
        if resource is None:
            return
        usage = avg_ncpus if proc_type is ProcType.CPU else gpu_usage
        resource.req_secs -= est_dur * usage
        resource.req_instances -= usage
        if resource.ninstances > 0:
            resource.estimated_delay += est_dur * usage / resource.ninstances

    def estimated_delay(self, proc_type: ProcType) -> float:
        resource = self.resources.get(proc_type)
        return resource.estimated_delay if resource else 0.0

    def available_frac(self, proc_type: ProcType) -> float:
        resource = self.resources.get(proc_type)
        return resource.available_frac if resource else 1.0


def jobs_to_fill(
    need: WorkNeed, job_size: Mapping[ProcType, tuple[float, float]]
) -> dict[ProcType, int] | None:
    """About how many jobs of each needed resource would fill the request; None if the
    size of a needed resource's job is unknown.

    ``job_size`` gives, per resource, a typical job's estimated duration and the instances
    it uses. Each job decrements the request as ``record_job`` does, so a resource needs
    enough jobs to cover both its seconds and its idle instances; the per-RPC cap bounds
    each count. Only the number of candidate rows read at once depends on this: what is
    sent is decided job by job.
    """
    left = max(0, need.max_jobs - need.njobs_sent)
    wanted = need.needed_types()
    if any(p not in job_size for p in wanted):
        return None
    if not need.rsc_spec_request:  # one figure for all resources: the shortest jobs fill it
        shortest = min((job_size[p][0] for p in wanted), default=math.inf)
        return {p: min(left, _count(need.seconds_to_fill, shortest)) for p in wanted}
    counts = {}
    for p in wanted:
        resource = need.resources[p]
        duration, usage = job_size[p]
        usage = max(usage, 1e-3)
        by_instances = math.ceil(resource.req_instances / usage) if resource.req_instances > 0 else 0
        counts[p] = min(left, max(by_instances, _count(resource.req_secs, duration * usage)))
    return counts


def _count(seconds: float, per_job: float) -> int:
    """Jobs of ``per_job`` seconds covering ``seconds`` (at least one)."""
    if not (seconds > 0 and per_job > 0 and math.isfinite(per_job)):
        return 1
    return max(1, min(math.ceil(seconds / per_job), 1_000_000))


def candidate_window(jobs: Mapping[ProcType, int] | None) -> int | None:
    """Candidate rows to read (and lock) at once for the jobs ``jobs_to_fill`` counted,
    or None if they are unknown.

    Candidates come in priority order whatever resource their app runs on, so with work
    wanted for several resources each one's jobs are spread over the rows: enough rows
    for the largest count on every resource. A quarter more and two spare cover skipped
    candidates.
    """
    if jobs is None:
        return None
    rows = len(jobs) * max(jobs.values(), default=0)
    return rows + rows // 4 + 2


def clamp_frac(value: float) -> float:
    """Available fractions are clamped to [0.1, 1] as BOINC does, so a host that was
    rarely on is not assumed to take forever."""
    if value != value:
        return 1.0
    return min(max(value, 0.1), 1.0)


# BOINC's sched_send.h: a client claiming more CPUs than this is not believed, whatever
# the project's max_ncpus says.
MAX_CPUS = 4096


@dataclass(frozen=True, slots=True)
class HostInstances:
    """The CPUs and GPUs (per type) a host is counted as having for its job limits.

    BOINC's effective_ncpus and per-type ninstances (get_job_limits): what the client
    reports, limited by the volunteer's "use at most N % of the CPUs" and capped, so that
    a claim of a million CPUs cannot multiply the per-RPC, in-progress and daily limits.
    The host row keeps what the client reported.
    """

    ncpus: int  # effective_ncpus: the volunteer's max_ncpus_pct, then the caps
    # The reported CPUs under the same caps, without max_ncpus_pct: BOINC scales the daily
    # quota by the host's p_ncpus (scaled_max_jobs_per_day), not by effective_ncpus.
    p_ncpus: int
    gpus: dict[ProcType, int] = field(default_factory=dict)  # types with at least one GPU

    @property
    def ngpus(self) -> int:
        return sum(self.gpus.values())

    def count(self, proc_type: ProcType) -> int:
        return self.ncpus if proc_type is ProcType.CPU else self.gpus.get(proc_type, 0)


def effective_ncpus(*, p_ncpus: int, max_ncpus_pct: float, max_ncpus: int) -> int:
    """BOINC's effective_ncpus: the reported CPUs times the volunteer's ``max_ncpus_pct``
    (rounded down), then bounded by the project's ``max_ncpus`` and MAX_CPUS, at least 1.

    A percentage of 0, or outside (0, 100), means all CPUs, as in BOINC's get_job_limits.
    The older ``max_cpus`` global preference is not read: BOINC's scheduler never used it
    (only the client does, when max_ncpus_pct is 0). Not applied here, unlike BOINC: the
    project-specific ``max_cpus`` preference (Cobblestone has no such preference).
    """
    n = p_ncpus
    if 0 < max_ncpus_pct < 100:
        n = int(n * max_ncpus_pct / 100.0)
    return max(min(n, max_ncpus, MAX_CPUS), 1)


def effective_instances(
    *,
    p_ncpus: int,
    gpu_counts: Iterable[tuple[ProcType, int]],
    max_ncpus: int,
    max_ngpus: int,
    max_ncpus_pct: float = 100.0,
) -> HostInstances:
    """A host's counts for its job limits: ``ncpus`` as ``effective_ncpus`` gives it,
    ``p_ncpus`` the same without the volunteer's percentage, and each GPU type's count
    bounded by ``max_ngpus`` (the percentage is for CPUs only, as in BOINC).

    As in the work request, the first report of a GPU type is the one that counts (a
    repeated ``<coproc_cuda>`` adds nothing).
    """
    gpus: dict[ProcType, int] = {}
    seen: set[ProcType] = set()
    for proc_type, count in gpu_counts:
        if proc_type in seen or not proc_type.is_gpu:
            continue
        seen.add(proc_type)
        if count > 0:
            gpus[proc_type] = min(count, max(max_ngpus, 1))
    return HostInstances(
        ncpus=effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=max_ncpus_pct, max_ncpus=max_ncpus),
        p_ncpus=effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=100.0, max_ncpus=max_ncpus),
        gpus=gpus,
    )


def max_jobs_per_rpc(*, ncpus: int, ngpus: int, gpu_multiplier: int, max_wus_to_send: int) -> int:
    """BOINC's per-RPC cap: (CPUs + gpu_multiplier × GPUs) × max_wus_to_send."""
    return max(1, (max(ncpus, 1) + gpu_multiplier * ngpus) * max(max_wus_to_send, 1))


@dataclass(frozen=True, slots=True)
class VersionOption:
    """An app version (or anonymous-platform version) usable for one app on this host."""

    key: int  # AppVersion id, or an index into the client's app_versions (anonymous)
    app_id: int
    proc_type: ProcType
    projected_flops: float
    peak_flops: float
    avg_ncpus: float
    gpu_usage: float
    anonymous: bool = False
    # Anonymous platform: the client's FLOPS over ours. The client estimates runtimes from
    # its own FLOPS, so the workunit's fpops_est and bound are sent multiplied by this.
    rsc_fpops_scale: float = 1.0


def choose_version(options: Iterable[VersionOption], need: WorkNeed) -> VersionOption | None:
    """The fastest version among those whose resource still needs work."""
    usable = [o for o in options if need.needs(o.proc_type) and o.projected_flops > 0]
    if not usable:
        return None
    return max(usable, key=lambda o: (o.projected_flops, o.proc_type is not ProcType.CPU, -o.key))


class Infeasible(StrEnum):
    """Why a job cannot go to this host (BOINC's infeasibility codes, by name)."""

    MEMORY = "memory"
    DISK = "disk"
    DEADLINE = "deadline"


@dataclass(frozen=True, slots=True)
class HostLimits:
    memory_bytes: float
    disk_free_bytes: float
    ignore_delay_bound: bool = False


def job_infeasible(
    *,
    est_dur: float,
    estimated_delay: float,
    delay_bound: float,
    rsc_memory_bound: float,
    rsc_disk_bound: float,
    limits: HostLimits,
    disk_used: float = 0.0,
) -> Infeasible | None:
    """None if the job fits: memory, remaining disk, and finishing before its deadline."""
    if limits.memory_bytes > 0 and rsc_memory_bound > limits.memory_bytes:
        return Infeasible.MEMORY
    if limits.disk_free_bytes > 0 and rsc_disk_bound > limits.disk_free_bytes - disk_used:
        return Infeasible.DISK
    if not limits.ignore_delay_bound and estimated_delay + est_dur > delay_bound:
        return Infeasible.DEADLINE
    return None


@dataclass(slots=True)
class InProgressLimits:
    """Jobs in progress on the host, counted per (app, resource) and per resource."""

    per_app: dict[tuple[int, ProcType], int] = field(default_factory=dict)
    per_resource: dict[ProcType, int] = field(default_factory=dict)
    app_limits: dict[tuple[int, ProcType], int] = field(default_factory=dict)  # 0 = none
    resource_limits: dict[ProcType, int] = field(default_factory=dict)  # 0 = none

    def allows(self, app_id: int, proc_type: ProcType) -> bool:
        app_limit = self.app_limits.get((app_id, proc_type), 0)
        if app_limit and self.per_app.get((app_id, proc_type), 0) >= app_limit:
            return False
        limit = self.resource_limits.get(proc_type, 0)
        return not (limit and self.per_resource.get(proc_type, 0) >= limit)

    def add(self, app_id: int, proc_type: ProcType) -> None:
        self.per_app[(app_id, proc_type)] = self.per_app.get((app_id, proc_type), 0) + 1
        self.per_resource[proc_type] = self.per_resource.get(proc_type, 0) + 1
