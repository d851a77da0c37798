"""Mutable client state inside one simulation run: the job queue and the attached projects.

These objects never leave the simulator; the report it returns is built from frozen values.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import ClientPrefs, HostSpec, ProjectSpec
from apps.emulator.domain.rr_sim import RRJob, RRResult, rr_simulate

MIN_REMAINING = 1.0  # seconds; an overrun job is still "about to finish", never done


@dataclass(slots=True, eq=False)
class SimJob:
    """A job on the host. ``flops`` is its speed when running (instance FLOPS x usage)."""

    key: int
    project: str
    app: str
    proc_type: ProcType
    usage: float
    fpops: float
    fpops_est: float
    flops: float
    deadline: float
    received: float
    done_fpops: float = 0.0
    running: bool = False
    started: bool = False
    slice_start: float = 0.0

    @property
    def remaining_est(self) -> float:
        """Estimated seconds to completion, from the size the client was told."""
        return max((self.fpops_est - self.done_fpops) / self.flops, MIN_REMAINING)

    @property
    def time_to_finish(self) -> float:
        """True seconds to completion if it keeps running (the simulator's next event)."""
        return max(self.fpops - self.done_fpops, 0.0) / self.flops


@dataclass(slots=True)
class SimProject:
    spec: ProjectSpec
    attached: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def resource_share(self) -> float:
        return self.spec.resource_share


@dataclass(slots=True)
class ClientState:
    """What the client knows: host, preferences, attached projects and queued jobs."""

    host: HostSpec
    prefs: ClientPrefs
    projects: dict[str, SimProject]
    rng: random.Random
    now: float = 0.0
    jobs: list[SimJob] = field(default_factory=list)
    version: int = 0  # bumped whenever the job set changes, to invalidate cached simulations
    _rr_cache: tuple[int, float, float, RRResult] | None = None

    def attached(self) -> list[SimProject]:
        return [p for p in self.projects.values() if p.attached]

    def ninstances(self, proc: ProcType) -> int:
        for rsc in self.host.resources:
            if rsc.proc_type is proc:
                return rsc.ninstances
        return 0

    def runnable_pairs(self) -> set[tuple[str, ProcType]]:
        """(project, resource type) pairs that have at least one job queued or running."""
        return {(j.project, j.proc_type) for j in self.jobs}

    @property
    def proc_types(self) -> tuple[ProcType, ...]:
        return tuple(r.proc_type for r in self.host.resources)

    def jobs_for(self, proc: ProcType) -> Iterator[SimJob]:
        return (j for j in self.jobs if j.proc_type is proc)

    def has_runnable(self, project: str, proc: ProcType | None = None) -> bool:
        return any(j.project == project and (proc is None or j.proc_type is proc) for j in self.jobs)

    def add_job(self, job: SimJob) -> None:
        self.jobs.append(job)
        self.version += 1

    def remove_job(self, job: SimJob) -> None:
        self.jobs.remove(job)
        self.version += 1

    def rr_sim(self, horizon: float) -> RRResult:
        """The round-robin simulation of the current queue, cached until the queue changes."""
        cached = self._rr_cache
        if cached and cached[0] == self.version and cached[1] == self.now and cached[2] == horizon:
            return cached[3]
        order = sorted(self.jobs, key=lambda j: (not j.running, not j.started, j.deadline, j.key))
        rr_jobs = [RRJob(j.key, j.project, j.proc_type, j.usage, j.remaining_est, j.deadline) for j in order]
        ninstances = {r.proc_type: float(r.ninstances) for r in self.host.resources}
        shares = {p.name: p.resource_share for p in self.attached()}
        result = rr_simulate(rr_jobs, ninstances, shares, now=self.now, horizon=horizon)
        self._rr_cache = (self.version, self.now, horizon, result)
        return result
