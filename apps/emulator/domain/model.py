"""Scenario values of the client emulator: host, projects, apps, jobs and client preferences.

Everything here is a frozen value written once by ``scenario.load_scenario`` and read by the
simulator. Times are seconds from the start of the simulation, speeds are peak FLOPS per
device instance and job sizes are floating-point operations, as in BOINC's client emulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from apps.core.domain.resources import ProcType

DAY = 86400.0


class PolicyName(StrEnum):
    """The client policies the emulator can run; the value is the name admins type."""

    V4 = "v4"  # the 4.x client: CPU debt scheduling, ETTPRC work fetch, no GPUs
    V6_GPU = "v6-gpu"  # the 6.x work-fetch design: per-resource backoff and long-term debt (client 6.6)
    REC = "rec"  # recent estimated credit and buffer hysteresis (client 7+)


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One processing resource type of the host: how many instances and how fast each is."""

    proc_type: ProcType
    ninstances: int
    flops: float  # peak FLOPS of one instance


@dataclass(frozen=True, slots=True)
class HostSpec:
    """The emulated host; it always has a CPU resource and may have coprocessors."""

    resources: tuple[ResourceSpec, ...]

    def resource(self, proc_type: ProcType) -> ResourceSpec | None:
        for rsc in self.resources:
            if rsc.proc_type is proc_type:
                return rsc
        return None

    @property
    def cpu(self) -> ResourceSpec:
        rsc = self.resource(ProcType.CPU)
        if rsc is None:  # guarded by scenario validation; kept for type narrowing
            raise ValueError("host has no CPU")
        return rsc

    def relative_speed(self, proc_type: ProcType) -> float:
        """FLOPS of one instance relative to one CPU, the weight of the work-fetch design's overall debt."""
        rsc = self.resource(proc_type)
        return 0.0 if rsc is None else rsc.flops / self.cpu.flops

    @property
    def total_peak_flops(self) -> float:
        return sum(r.ninstances * r.flops for r in self.resources)


@dataclass(frozen=True, slots=True)
class AppVersionSpec:
    """A version of an app for one resource type; ``usage`` is instances per job (may be < 1)."""

    proc_type: ProcType
    usage: float = 1.0


@dataclass(frozen=True, slots=True)
class AppSpec:
    """An app of a simulated project, with BCE's sim-only job parameters."""

    name: str
    fpops_est: float
    latency_bound: float  # delay bound: a job's deadline is its send time plus this
    versions: tuple[AppVersionSpec, ...]
    fpops_stdev: float = 0.0
    weight: float = 1.0
    available_from: float = 0.0  # the server has no version of this app before this time

    def version_for(self, proc_type: ProcType) -> AppVersionSpec | None:
        for version in self.versions:
            if version.proc_type is proc_type:
                return version
        return None


@dataclass(frozen=True, slots=True)
class QueuedJobSpec:
    """A job on the host when its project is attached (as A's in the work-fetch design's Example 2)."""

    app: str
    proc_type: ProcType
    fpops: float
    deadline: float  # seconds after the project's attach time
    usage: float = 1.0


@dataclass(frozen=True, slots=True)
class ProjectSpec:
    """A simulated project: its resource share, its server's apps and its initial queue."""

    name: str
    resource_share: float
    apps: tuple[AppSpec, ...]
    attach_at: float = 0.0
    queued_jobs: tuple[QueuedJobSpec, ...] = ()
    job_limit: int | None = None  # how many jobs the server can send in all; None = endless


@dataclass(frozen=True, slots=True)
class ClientPrefs:
    """Client preferences and emulator knobs.

    ``work_buf_min`` is the work-fetch design's connect interval CI and ``work_buf_additional`` its AW;
    ``connection_period`` is the 4.x client's T (defaults to CI). ``poll_interval`` is how often the
    emulator runs work fetch between events; rescheduling with preemption happens every
    ``cpu_scheduling_period``.
    """

    work_buf_min: float = 0.1 * DAY
    work_buf_additional: float = 0.25 * DAY
    connection_period: float | None = None
    cpu_scheduling_period: float = 3600.0
    poll_interval: float = 3600.0
    rec_half_life: float = 10 * DAY
    sample_interval: float = DAY

    @property
    def work_buf_total(self) -> float:
        return self.work_buf_min + self.work_buf_additional

    @property
    def v4_connection_period(self) -> float:
        return self.work_buf_min if self.connection_period is None else self.connection_period


@dataclass(frozen=True, slots=True)
class Scenario:
    """One emulator run's inputs, as an admin writes them in YAML or JSON."""

    name: str
    host: HostSpec
    projects: tuple[ProjectSpec, ...]
    duration: float
    prefs: ClientPrefs = field(default_factory=ClientPrefs)
    seed: int = 1
    description: str = ""

    def project(self, name: str) -> ProjectSpec:
        for project in self.projects:
            if project.name == name:
                return project
        raise KeyError(name)
