"""What a simulation run reports, and the recorder that measures it.

The figures of merit are BCE's, computed at peak FLOPS:

- idle fraction: capacity not used, over total capacity;
- wasted fraction: FLOPs spent on jobs that finished after their deadline, over capacity;
- share violation: sum over projects of |used - total used x share fraction|, over total used;
- monotony: the RMS, over each project's attached time, of how long since it last ran,
  averaged over projects and divided by (scheduling period x number of projects) to give X;
  monotony = 1 - 1/(X + 1);
- RPCs per job: scheduler RPCs / (2 x jobs received).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import Scenario


@dataclass(frozen=True, slots=True)
class FiguresOfMerit:
    idle_fraction: float
    wasted_fraction: float
    share_violation: float
    monotony: float
    rpcs_per_job: float


@dataclass(frozen=True, slots=True)
class ProjectResourceUsage:
    """How much of one resource type one project used over the whole run."""

    project: str
    proc_type: ProcType
    instance_seconds: float
    flops: float  # instance-seconds x peak FLOPS of an instance
    share: float  # fraction of the resource's capacity over the run


@dataclass(frozen=True, slots=True)
class UsageBucket:
    """Instance-seconds used in [start, end): ``used[project][resource]``, in report order."""

    start: float
    end: float
    used: tuple[tuple[float, ...], ...]


@dataclass(frozen=True, slots=True)
class SimulationReport:
    """The result of ``run_scenario``: shares, figures of merit, counts and a usage timeline."""

    scenario: str
    policy: str
    duration: float
    projects: tuple[str, ...]
    resources: tuple[ProcType, ...]
    ninstances: tuple[int, ...]
    resource_flops: tuple[float, ...]  # peak FLOPS of one instance, per resource
    usage: tuple[ProjectResourceUsage, ...]
    figures: FiguresOfMerit
    buckets: tuple[UsageBucket, ...]
    n_rpcs: int
    n_jobs_received: int
    n_jobs_completed: int
    n_jobs_missed: int  # finished after their deadline, or still running past it at the end
    n_jobs_aborted: int  # never started before their deadline

    def _used(self, start: float | None, end: float | None) -> tuple[list[list[float]], float]:
        lo = 0.0 if start is None else start
        hi = self.duration if end is None else end
        used = [[0.0] * len(self.resources) for _ in self.projects]
        for bucket in self.buckets:
            overlap = min(bucket.end, hi) - max(bucket.start, lo)
            if overlap <= 0:
                continue
            frac = overlap / (bucket.end - bucket.start)  # pro rata inside a bucket
            for i, row in enumerate(bucket.used):
                for j, value in enumerate(row):
                    used[i][j] += value * frac
        return used, max(hi - lo, 0.0)

    def share(
        self, project: str, proc_type: ProcType, *, start: float | None = None, end: float | None = None
    ) -> float:
        """Fraction of the resource's capacity the project used in [start, end)."""
        used, span = self._used(start, end)
        j = self.resources.index(proc_type)
        capacity = span * self.ninstances[j]
        return used[self.projects.index(project)][j] / capacity if capacity > 0 else 0.0

    def idle(self, proc_type: ProcType, *, start: float | None = None, end: float | None = None) -> float:
        """Fraction of the resource's capacity nobody used in [start, end)."""
        return 1.0 - sum(self.share(p, proc_type, start=start, end=end) for p in self.projects)

    def processing(self, project: str, *, start: float | None = None, end: float | None = None) -> float:
        """Peak FLOPs the project got on all resources in [start, end)."""
        used, _ = self._used(start, end)
        row = used[self.projects.index(project)]
        return sum(value * flops for value, flops in zip(row, self.resource_flops, strict=True))


class Recorder:
    """Accumulates usage, completions and RPCs as the simulator advances."""

    def __init__(self, scenario: Scenario, policy: str, duration: float) -> None:
        self.scenario = scenario
        self.policy = policy
        self.duration = duration
        self.projects = tuple(p.name for p in scenario.projects)
        self.resources = tuple(r.proc_type for r in scenario.host.resources)
        self.width = scenario.prefs.sample_interval
        nbuckets = max(1, math.ceil(duration / self.width))
        self.buckets = [[[0.0] * len(self.resources) for _ in self.projects] for _ in range(nbuckets)]
        self.totals = [[0.0] * len(self.resources) for _ in self.projects]
        self.flops_wasted = 0.0
        self.n_rpcs = self.n_received = self.n_completed = self.n_missed = self.n_aborted = 0
        self.last_ran: dict[str, float] = {}
        self.gap_square_integral = dict.fromkeys(self.projects, 0.0)
        self.attached_time = dict.fromkeys(self.projects, 0.0)
        self._pidx = {p: i for i, p in enumerate(self.projects)}
        self._ridx = {r: j for j, r in enumerate(self.resources)}

    def attach(self, project: str, now: float) -> None:
        self.last_ran[project] = now

    def advance(self, start: float, end: float, used: Mapping[tuple[str, ProcType], float]) -> None:
        dt = end - start
        if dt <= 0:
            return
        for (project, proc), amount in used.items():
            i, j = self._pidx[project], self._ridx[proc]
            self.totals[i][j] += amount
            self._spread(start, end, i, j, amount)
        ran = {project for (project, _), amount in used.items() if amount > 0}
        for project, last in self.last_ran.items():
            self.attached_time[project] += dt
            if project in ran:
                self.last_ran[project] = end
            else:
                gap = start - last
                self.gap_square_integral[project] += ((gap + dt) ** 3 - gap**3) / 3

    def _spread(self, start: float, end: float, i: int, j: int, amount: float) -> None:
        rate = amount / (end - start)
        t = start
        while t < end:
            k = min(int(t // self.width), len(self.buckets) - 1)
            stop = min(end, (k + 1) * self.width) if k < len(self.buckets) - 1 else end
            self.buckets[k][i][j] += rate * (stop - t)
            t = stop

    def completed(self, fpops: float, finished: float, deadline: float) -> None:
        self.n_completed += 1
        if finished > deadline + 1e-6:
            self.n_missed += 1
            self.flops_wasted += fpops

    def missed_unfinished(self, done_fpops: float) -> None:
        """A job still running at the end of the run, past its deadline: whenever it ends it
        is late, so it is missed and the work done on it is wasted."""
        self.n_missed += 1
        self.flops_wasted += done_fpops

    def report(self) -> SimulationReport:
        host = self.scenario.host
        ninst = tuple(r.ninstances for r in host.resources)
        flops = tuple(r.flops for r in host.resources)
        capacity = [n * f * self.duration for n, f in zip(ninst, flops, strict=True)]
        usage = tuple(
            ProjectResourceUsage(
                project=p,
                proc_type=r,
                instance_seconds=self.totals[i][j],
                flops=self.totals[i][j] * flops[j],
                share=self.totals[i][j] / (ninst[j] * self.duration) if self.duration > 0 else 0.0,
            )
            for i, p in enumerate(self.projects)
            for j, r in enumerate(self.resources)
        )
        return SimulationReport(
            scenario=self.scenario.name,
            policy=self.policy,
            duration=self.duration,
            projects=self.projects,
            resources=self.resources,
            ninstances=ninst,
            resource_flops=flops,
            usage=usage,
            figures=self._figures(usage, sum(capacity)),
            buckets=tuple(
                UsageBucket(
                    start=k * self.width,
                    end=min((k + 1) * self.width, self.duration),
                    used=tuple(tuple(row) for row in bucket),
                )
                for k, bucket in enumerate(self.buckets)
            ),
            n_rpcs=self.n_rpcs,
            n_jobs_received=self.n_received,
            n_jobs_completed=self.n_completed,
            n_jobs_missed=self.n_missed,
            n_jobs_aborted=self.n_aborted,
        )

    def _figures(self, usage: tuple[ProjectResourceUsage, ...], flops_total: float) -> FiguresOfMerit:
        used_by = dict.fromkeys(self.projects, 0.0)
        for u in usage:
            used_by[u.project] += u.flops
        flops_used = sum(used_by.values())
        share_sum = sum(p.resource_share for p in self.scenario.projects)
        violation = 0.0
        if flops_used > 0 and share_sum > 0:
            violation = (
                sum(
                    abs(used_by[p.name] - flops_used * p.resource_share / share_sum)
                    for p in self.scenario.projects
                )
                / flops_used
            )
        rms = [
            math.sqrt(self.gap_square_integral[p] / self.attached_time[p])
            for p in self.projects
            if self.attached_time[p] > 0
        ]
        x = 0.0
        if rms:
            x = sum(rms) / len(rms) / (self.scenario.prefs.cpu_scheduling_period * len(rms))
        return FiguresOfMerit(
            idle_fraction=max(0.0, (flops_total - flops_used) / flops_total) if flops_total > 0 else 0.0,
            wasted_fraction=self.flops_wasted / flops_total if flops_total > 0 else 0.0,
            share_violation=violation,
            monotony=1 - 1 / (x + 1),
            rpcs_per_job=self.n_rpcs / (2 * max(self.n_received, 1)),
        )
