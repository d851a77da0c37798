"""Round-robin simulation of the queued jobs (the work-fetch design's first step).

On each resource type, the projects with jobs for it share its instances in proportion to
their resource shares (a project that cannot use its whole part gives the rest to the
others), and each project runs its jobs in queue order. The simulation steps from one job
completion to the next and yields, per resource type:

- ``shortfall``: idle instance-seconds between now and the horizon (the buffer);
- ``saturated_time``: how long from now until an instance first goes idle;
- ``nidle_now``: instances idle right now;

and the set of jobs that would finish after their deadline, which the schedulers run
earliest-deadline-first ("high-priority mode").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from apps.core.domain.resources import ProcType

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class RRJob:
    """A queued job as the simulation sees it: ``remaining`` seconds at full ``usage``."""

    key: int
    project: str
    proc_type: ProcType
    usage: float
    remaining: float
    deadline: float


@dataclass(frozen=True, slots=True)
class ResourceOutlook:
    """What the round-robin simulation predicts for one resource type."""

    proc_type: ProcType
    ninstances: float
    shortfall: float
    saturated_time: float
    nidle_now: float


@dataclass(frozen=True, slots=True)
class RRResult:
    resources: Mapping[ProcType, ResourceOutlook]
    deadline_misses: frozenset[int]


class _Entry:
    __slots__ = ("deadline", "key", "project", "rate", "remaining", "usage")

    def __init__(self, job: RRJob) -> None:
        self.key = job.key
        self.project = job.project
        self.usage = job.usage
        self.remaining = max(job.remaining, 0.0)
        self.deadline = job.deadline
        self.rate = 0.0  # fraction of full speed it currently gets


class _Resource:
    """One resource type's queues; its allocation is recomputed only when a job ends."""

    __slots__ = ("demand", "idle", "ninstances", "queues", "running")

    def __init__(self, ninstances: float) -> None:
        self.ninstances = ninstances
        self.queues: dict[str, list[_Entry]] = {}
        self.demand: dict[str, float] = {}
        self.running: list[_Entry] = []
        self.idle = ninstances

    def add(self, entry: _Entry) -> None:
        self.queues.setdefault(entry.project, []).append(entry)
        self.demand[entry.project] = self.demand.get(entry.project, 0.0) + entry.usage

    def remove(self, entry: _Entry) -> None:
        queue = self.queues[entry.project]
        queue.remove(entry)
        if queue:
            self.demand[entry.project] -= entry.usage
        else:
            del self.queues[entry.project]
            del self.demand[entry.project]

    def allocate(self, shares: Mapping[str, float]) -> None:
        """Weighted water-filling of the instances over projects, then over their jobs."""
        alloc: dict[str, float] = {}
        left = self.ninstances
        open_projects = list(self.demand)
        if len(open_projects) == 1 or sum(self.demand.values()) <= left + _EPS:
            # Common cases: one project takes what it can use, or everybody fits.
            for p in open_projects:
                alloc[p] = min(self.demand[p], left)
            left -= sum(alloc.values())
            open_projects = []
        while open_projects and left > _EPS:
            weights = {p: max(shares.get(p, 0.0), _EPS) for p in open_projects}
            total = sum(weights.values())
            capped = [p for p in open_projects if self.demand[p] <= left * weights[p] / total + _EPS]
            if not capped:
                for p in open_projects:
                    alloc[p] = left * weights[p] / total
                left = 0.0
                break
            for p in capped:
                alloc[p] = self.demand[p]
                left -= self.demand[p]
            open_projects = [p for p in open_projects if p not in capped]
        self.running = []
        for p, amount in alloc.items():
            for entry in self.queues[p]:
                if amount <= _EPS:
                    break
                given = min(entry.usage, amount)
                entry.rate = given / entry.usage
                self.running.append(entry)
                amount -= given
        self.idle = max(left, 0.0)


def rr_simulate(
    jobs: Iterable[RRJob],
    ninstances: Mapping[ProcType, float],
    shares: Mapping[str, float],
    *,
    now: float,
    horizon: float,
) -> RRResult:
    """Simulate weighted round-robin from ``now``; ``horizon`` bounds the shortfall window.

    ``jobs`` must be in each project's queue order; resources absent from ``ninstances``
    are ignored, as are jobs asking for more instances than the resource has.
    """
    resources = {proc: _Resource(n) for proc, n in ninstances.items()}
    for job in jobs:
        rsc = resources.get(job.proc_type)
        if rsc is not None and job.usage <= rsc.ninstances + _EPS:
            rsc.add(_Entry(job))
    shortfall = dict.fromkeys(ninstances, 0.0)
    saturated: dict[ProcType, float | None] = dict.fromkeys(ninstances)
    misses: set[int] = set()
    for rsc in resources.values():
        rsc.allocate(shares)
    nidle_now = {proc: rsc.idle for proc, rsc in resources.items()}
    t = 0.0
    next_prune = horizon
    while True:
        if t >= next_prune:
            # Past the horizon only deadline misses matter; stop early where none can occur.
            _prune(resources, now, t, saturated)
            next_prune = 1.5 * t
        dt = min(
            (e.remaining / e.rate for rsc in resources.values() for e in rsc.running),
            default=None,
        )
        if dt is None:
            break
        _count_idle({p: r.idle for p, r in resources.items()}, t, t + dt, horizon, shortfall, saturated)
        t += dt
        for rsc in resources.values():
            ended = False
            for entry in rsc.running:
                entry.remaining -= dt * entry.rate
                if entry.remaining <= _EPS:
                    ended = True
                    rsc.remove(entry)
                    if now + t > entry.deadline + _EPS:
                        misses.add(entry.key)
            if ended:
                rsc.allocate(shares)
    # Everything has finished: every instance is idle from t to the horizon.
    _count_idle(dict(ninstances), t, max(t, horizon), horizon, shortfall, saturated)
    outlook = {
        proc: ResourceOutlook(
            proc_type=proc,
            ninstances=ninstances[proc],
            shortfall=shortfall[proc],
            saturated_time=sat if (sat := saturated[proc]) is not None else t,
            nidle_now=nidle_now[proc],
        )
        for proc in ninstances
    }
    return RRResult(resources=outlook, deadline_misses=frozenset(misses))


def _prune(
    resources: Mapping[ProcType, _Resource], now: float, t: float, saturated: dict[ProcType, float | None]
) -> None:
    """Drop a resource's queue when even its slowest job must finish before any deadline.

    Allocation is work-conserving while jobs outnumber instances and runs every job at full
    speed otherwise, so all of them are done by ``t + work / ninstances + longest job``.
    """
    for proc, rsc in resources.items():
        entries = [e for queue in rsc.queues.values() for e in queue]
        if not entries:
            continue
        work = sum(e.remaining * e.usage for e in entries)
        latest_end = now + t + work / rsc.ninstances + max(e.remaining for e in entries)
        if latest_end <= min(e.deadline for e in entries):
            if saturated[proc] is None:
                saturated[proc] = t + work / rsc.ninstances
            rsc.queues.clear()
            rsc.demand.clear()
            rsc.running = []


def _count_idle(
    idle: Mapping[ProcType, float],
    start: float,
    end: float,
    horizon: float,
    shortfall: dict[ProcType, float],
    saturated: dict[ProcType, float | None],
) -> None:
    for proc, amount in idle.items():
        if amount <= _EPS:
            continue
        if saturated[proc] is None:
            saturated[proc] = start
        if start < horizon:
            shortfall[proc] += amount * (min(end, horizon) - start)
