"""What every client policy provides to the simulator, and helpers they share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from apps.core.domain.resources import ProcType
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState, SimJob

_EPS = 1e-9

# (project, resource type) -> instance-seconds used in the last simulation step
Usage = Mapping[tuple[str, ProcType], float]


@dataclass(frozen=True, slots=True)
class FetchChoice:
    """A work-fetch decision: which project to ask and what to ask it for."""

    project: str
    request: WorkRequest
    reason: str


class ClientPolicy(Protocol):
    """The three decisions a BOINC client makes, plus the accounting they depend on."""

    name: str

    def attach(self, state: ClientState, project: str) -> None:
        """A project was attached (at ``state.now``)."""

    def account(self, state: ClientState, dt: float, used: Usage) -> None:
        """``dt`` seconds have passed, during which each project used ``used``."""

    def work_fetch(self, state: ClientState) -> FetchChoice | None:
        """Whether to make a scheduler RPC now, to which project, asking for what."""

    def handle_reply(self, state: ClientState, choice: FetchChoice, jobs: tuple[SentJob, ...]) -> None:
        """The RPC of ``choice`` returned ``jobs`` (already queued on the host)."""

    def schedule(self, state: ClientState, preempt: bool) -> None:
        """Set ``running`` on the jobs to run; without ``preempt`` only fill idle instances."""

    def next_wakeup(self, state: ClientState) -> float | None:
        """The next time the policy wants to be asked again (a backoff ends, a buffer runs low)."""


def job_order_key(job: SimJob) -> tuple[bool, bool, float, int]:
    """The 4.x client's preference: running before preempted before new, new by earliest deadline."""
    return (not job.running, not job.started, job.deadline, job.key)


def fill_resource(
    state: ClientState,
    proc: ProcType,
    *,
    preempt: bool,
    keep: Callable[[SimJob], bool],
    urgent: frozenset[int] | set[int],
    pick_project: Callable[[set[str]], str],
    on_pick: Callable[[SimJob], None],
) -> set[int]:
    """Choose the jobs to run on one resource type; return their keys.

    Order, as BOINC's run list: without preemption everything running stays; then jobs in
    deadline danger by earliest deadline; then running jobs ``keep`` says are inside their
    time slice; then, repeatedly, the job of the project ``pick_project`` names (its
    running, then preempted, then earliest-deadline new job).
    ``on_pick`` lets the policy update its anticipated debt or temporary REC. It is called
    for every job given an instance, kept and deadline-danger jobs included: the 4.x client
    lowers the anticipated debt for every CPU handed out, client 6.x charged the anticipated
    debt of every job it scheduled (EDF ones too) and client 7 bumps the temporary REC of
    every job added to the run list, so a project already holding instances ranks lower
    for the rest.
    """
    capacity = float(state.ninstances(proc))
    jobs = sorted(state.jobs_for(proc), key=job_order_key)
    chosen: set[int] = set()

    def take(job: SimJob) -> None:
        nonlocal capacity
        if job.key not in chosen and job.usage <= capacity + _EPS:
            chosen.add(job.key)
            capacity -= job.usage
            on_pick(job)

    if not preempt:
        for job in jobs:
            if job.running:
                take(job)
    for job in sorted((j for j in jobs if j.key in urgent), key=lambda j: (j.deadline, j.key)):
        take(job)
    if preempt:
        for job in jobs:
            if job.running and keep(job):
                take(job)
    pending: dict[str, list[SimJob]] = {}
    for job in jobs:
        if job.key not in chosen:
            pending.setdefault(job.project, []).append(job)
    while capacity > _EPS and pending:
        project = pick_project(set(pending))
        job = pending[project].pop(0)
        if not pending[project]:
            del pending[project]
        take(job)
    return chosen


def apply_run_set(state: ClientState, proc: ProcType, chosen: Iterable[int]) -> None:
    """Start, resume or preempt the jobs of one resource type to match ``chosen``."""
    keys = set(chosen)
    for job in state.jobs_for(proc):
        should_run = job.key in keys
        if should_run and not job.running:
            job.slice_start = state.now
            job.started = True
        job.running = should_run


def schedule_cpu_by_debt(
    state: ClientState,
    debts: Mapping[str, float],
    *,
    preempt: bool,
    urgent: frozenset[int] | set[int],
    time_slice: bool,
) -> None:
    """Run CPU jobs of the projects with the largest anticipated debt (the 4.x client's loop).

    Each job given a CPU (a deadline-danger job, a running job kept, or a debt pick) lowers
    its project's anticipated debt by one scheduling period of its usage, so the CPUs are
    shared out by debt; jobs in ``urgent`` (deadline danger) first. With ``time_slice`` a
    running job stays until its slice of one scheduling period ends (client 6.6); without
    it every preempting pass hands each CPU out by debt afresh (the 4.x client).
    """
    period = state.prefs.cpu_scheduling_period
    anticipated = dict(debts)

    def pick(projects: set[str]) -> str:
        return max(projects, key=lambda p: (anticipated.get(p, 0.0), p))

    def charge(job: SimJob) -> None:
        anticipated[job.project] = anticipated.get(job.project, 0.0) - period * job.usage

    chosen = fill_resource(
        state,
        ProcType.CPU,
        preempt=preempt,
        keep=(lambda j: state.now - j.slice_start < period) if time_slice else (lambda j: False),
        urgent=urgent,
        pick_project=pick,
        on_pick=charge,
    )
    apply_run_set(state, ProcType.CPU, chosen)


def backoff_wakeup(times: Iterable[float], now: float) -> float | None:
    future = [t for t in times if t > now]
    return min(future) if future else None
