"""Client 4.x ("v4"): CPU scheduling by debt, work fetch by ETTPRC.

This client knows only CPUs: it schedules CPU jobs, sends old-style requests with a single
``work_req_seconds`` and reports no coprocessors, so servers send it CPU jobs only and any
GPU stays idle.

Two choices the 4.x design leaves open: the anticipated debt of a project drops by one
scheduling period per job it is given (the design's ``total_work_done_this_period / ncpus``
is zero on the first pass and tiny after an event, which would hand every CPU to one
project); and, since that client makes one RPC at a time, the project asked is the one with
the largest work request. A request that brings no job backs the project off for 1 min
doubling up to 4 h, this client's only backoff.

As in that design, there is no time slice (every preempting pass hands each CPU out by
anticipated debt afresh, and every CPU handed out, a running job's included, lowers it),
and the client wakes when a project's ETTPRC is due to fall below T, since that client checks
the work request every second.
"""

from __future__ import annotations

import math
from enum import IntEnum

from apps.core.domain.resources import ProcType
from apps.emulator.domain.backoff import (
    MAX_RPC_BACKOFF,
    MIN_RPC_BACKOFF,
    Backoff,
    backoff_after_no_work,
    backoff_cleared,
)
from apps.emulator.domain.debt import update_v4_debts
from apps.emulator.domain.policies.base import (
    FetchChoice,
    Usage,
    backoff_wakeup,
    schedule_cpu_by_debt,
)
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState

MIN_CONNECTION_PERIOD = 180.0  # a zero T would never ask for work before starving
ETTPRC_CHECK_INTERVAL = 1.0  # the 4.x client checks the work request once a second


class Urgency(IntEnum):
    DONT_NEED_WORK = 0
    NEED_WORK = 1
    NEED_WORK_IMMEDIATELY = 2


def min_results(ncpus: int, share: float, total_share: float) -> int:
    """Results project P needs so the CPU scheduler is not starved: ceil(ncpus * share)."""
    return math.ceil(ncpus * share / total_share) if total_share > 0 else 0


def ettprc(cpu_times_by_deadline: list[float], k: int, avg_proc_rate: float) -> float:
    """Estimated time until the project has ``k`` results left (the 4.x client's).

    ``cpu_times_by_deadline`` holds the estimated CPU time of each runnable result in
    increasing deadline order; the ``k`` latest-deadline ones are skipped.
    """
    if avg_proc_rate <= 0:
        return 0.0
    kept = cpu_times_by_deadline[: max(len(cpu_times_by_deadline) - max(k, 0), 0)]
    return sum(kept) / avg_proc_rate


def ettprc_falls_below(
    queue: list[tuple[float, float]], k: int, avg_proc_rate: float, connection_period: float
) -> float | None:
    """Seconds until ETTPRC(P, ``k``) falls below T while the running jobs keep running.

    ``queue`` holds, for each runnable result in increasing deadline order, its estimated
    CPU time and the CPUs it uses now (its usage if running, else 0). ETTPRC counts all but
    the ``k`` latest-deadline results, so it falls as the running ones among them progress.
    None when ETTPRC is already below T (work fetch has acted on it) or is not falling.
    """
    if avg_proc_rate <= 0:
        return None
    counted = queue[: max(len(queue) - max(k, 0), 0)]
    starvation = sum(cpu_time for cpu_time, _ in counted) / avg_proc_rate
    falling = sum(cpus for cpu_time, cpus in counted if cpu_time > 0) / avg_proc_rate
    if starvation < connection_period or falling <= 0:
        return None
    return (starvation - connection_period) / falling


def compute_work_request(
    queues: dict[str, list[float]],
    shares: dict[str, float],
    *,
    ncpus: int,
    connection_period: float,
    active_frac: float = 1.0,
) -> tuple[Urgency, dict[str, float]]:
    """The 4.x client's ``compute_work_request``: urgency and each project's work request (CPU s)."""
    total_share = sum(shares.values())
    urgency = Urgency.DONT_NEED_WORK
    requests = dict.fromkeys(queues, 0.0)
    for project, times in queues.items():
        rate = shares[project] / total_share * ncpus * active_frac if total_share > 0 else 0.0
        if rate <= 0:
            continue
        starvation = ettprc(times, min_results(ncpus, shares[project], total_share) - 1, rate)
        if starvation < connection_period:
            level = Urgency.NEED_WORK_IMMEDIATELY if starvation == 0 else Urgency.NEED_WORK
            urgency = max(urgency, level)
            requests[project] = max(0.0, (2 * connection_period - starvation) * rate)
    if urgency is Urgency.DONT_NEED_WORK:
        requests = dict.fromkeys(queues, 0.0)
    return urgency, requests


class V4Policy:
    name = "v4"

    def __init__(self) -> None:
        self.debt: dict[str, float] = {}
        self.rpc_backoff: dict[str, Backoff] = {}

    def attach(self, state: ClientState, project: str) -> None:
        self.debt[project] = 0.0
        self.rpc_backoff[project] = Backoff()

    def account(self, state: ClientState, dt: float, used: Usage) -> None:
        projects = [p.name for p in state.attached()]
        self.debt = update_v4_debts(
            {p: self.debt[p] for p in projects},
            shares={p: state.projects[p].resource_share for p in projects},
            work_done={p: used.get((p, ProcType.CPU), 0.0) for p in projects},
            runnable={p for p in projects if state.has_runnable(p, ProcType.CPU)},
        )

    @staticmethod
    def _queues(state: ClientState) -> dict[str, list[tuple[float, float]]]:
        """Each project's CPU results by deadline: (estimated CPU time, CPUs used now)."""
        cpu_flops = state.host.cpu.flops
        queues: dict[str, list[tuple[float, float]]] = {p.name: [] for p in state.attached()}
        for job in sorted(state.jobs_for(ProcType.CPU), key=lambda j: (j.deadline, j.key)):
            if job.project in queues:
                cpu_time = max(job.fpops_est - job.done_fpops, 0.0) / cpu_flops
                queues[job.project].append((cpu_time, job.usage if job.running else 0.0))
        return queues

    @staticmethod
    def _connection_period(state: ClientState) -> float:
        return max(state.prefs.v4_connection_period, MIN_CONNECTION_PERIOD)

    def work_fetch(self, state: ClientState) -> FetchChoice | None:
        queues = self._queues(state)
        urgency, requests = compute_work_request(
            {p: [cpu_time for cpu_time, _ in queue] for p, queue in queues.items()},
            {p.name: p.resource_share for p in state.attached()},
            ncpus=state.ninstances(ProcType.CPU),
            connection_period=self._connection_period(state),
        )
        candidates = [
            p for p, r in requests.items() if r > 0 and not self.rpc_backoff[p].is_backed_off(state.now)
        ]
        if urgency is Urgency.DONT_NEED_WORK or not candidates:
            return None
        project = max(candidates, key=lambda p: (requests[p], p))
        request = WorkRequest(work_req_seconds=requests[project], rsc_spec_request=False)
        return FetchChoice(project, request, urgency.name)

    def handle_reply(self, state: ClientState, choice: FetchChoice, jobs: tuple[SentJob, ...]) -> None:
        if jobs:
            self.rpc_backoff[choice.project] = backoff_cleared()
        else:
            self.rpc_backoff[choice.project] = backoff_after_no_work(
                self.rpc_backoff[choice.project],
                now=state.now,
                u=state.rng.random(),
                min_interval=MIN_RPC_BACKOFF,
                max_interval=MAX_RPC_BACKOFF,
            )

    def schedule(self, state: ClientState, preempt: bool) -> None:
        # The 4.x client has no deadline-danger mode and no time slice: each pass hands every CPU
        # to the project with the largest anticipated debt, preempting running jobs.
        schedule_cpu_by_debt(state, self.debt, preempt=preempt, urgent=frozenset(), time_slice=False)

    def next_wakeup(self, state: ClientState) -> float | None:
        """A backoff ending, or the first once-a-second check after some project's ETTPRC
        falls below T (the 4.x client calls ``compute_work_request`` every second)."""
        times = [b.until for b in self.rpc_backoff.values()]
        shares = {p.name: p.resource_share for p in state.attached()}
        total_share = sum(shares.values())
        ncpus = state.ninstances(ProcType.CPU)
        period = self._connection_period(state)
        for project, queue in self._queues(state).items():
            rate = shares[project] / total_share * ncpus if total_share > 0 else 0.0
            k = min_results(ncpus, shares[project], total_share) - 1
            wait = ettprc_falls_below(queue, k, rate, period)
            if wait is not None:
                times.append(state.now + wait + ETTPRC_CHECK_INTERVAL)
        return backoff_wakeup(times, state.now + 1.0)
