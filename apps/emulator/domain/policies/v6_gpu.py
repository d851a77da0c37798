"""Client 6.6 ("v6-gpu"): the work-fetch design's rules for CPUs and GPUs, with per-resource debts.

Every rule of that design is applied:

- a backoff per (project, resource type), doubling from 600 s up to one day when a request
  for that type brings no job of it, cleared by any job of it (randomised as BOINC does);
- a long-term debt (LTD) per resource type: each debt-eligible project gains what it was
  owed (its share, among the eligible projects, of the elapsed instance-seconds) minus what
  it got, then a zero-sum offset over the eligible projects, then an offset that makes the
  largest debt zero;
- an overall debt per project: the resource LTDs weighted by their speed relative to the CPU;
- work fetch: major shortfall (idle before CI), then minor shortfall (idle before CI+AW),
  then starved project, each tried on the coprocessors before the CPU; a major shortfall asks
  for its resource only, the others for every type that has a shortfall, backed off or not.

Where the design is open or ambiguous, this module reads it as follows (tests/emulator/
test_examples.py measures each consequence):

(a) Debt eligibility. The design makes P eligible for R when "P is not backed off for R, and
    the backoff interval is not at the max". These backoff conditions are applied to a
    project with no job on the host; a project with a runnable job of any type is eligible
    for every type. Client 6.6 made the same kind of exception (its ``debt_eligible``
    returned true for a project with runnable jobs before testing backoffs), per resource.
    Read per resource, Example 1 cannot reach its target: GPU-only A reaches the one-day CPU
    backoff within two days, B is then the only CPU-eligible project, and B's CPU debt can
    no longer move (it is owed all it uses, and the zero-sum offset cancels any change). The
    overall debt then ranks A and B by GPU debt alone, and any lasting GPU split other than
    50/50 widens the GPU debt gap without bound, so work fetch drives the GPU to 50/50
    (measured: A 50.8%; ``V6GpuPolicy(literal_eligibility=True)`` applies the backoff
    conditions alone, as written).
    Consequence of this reading: a project with work accrues debt on a resource it has no
    app for. In the design's Example 3 B has no GPU jobs and, as written, no other work, so it stays
    ineligible and is not paid back; if B ran CPU jobs all year while A used the twice
    faster GPU, B is owed the difference and is paid back once it has a GPU app (scenario
    ``example3_with_cpu_work``), which is Example 1's equal-processing rule at work.
(b) "Overworked", which the design uses but does not define. Client 6.6 called a project
    overworked on R when its LTD on R was below -max(1 day, buffer + time slice). Here it is
    the overall debt lying more than that long, in processing of the whole host (instances x
    relative speed), below the largest overall debt. Example 1's balance has the resource
    debts drift apart for ever (A is owed CPU time it never uses, B GPU time) while their
    speed-weighted sums stay level; a per-resource threshold would mark A overworked on the
    GPU after two days, hold its GPU debt there, and so split the GPU 50/50 again. Relative,
    not absolute, because both overall debts drift down together.
(c) Job scheduling, on which the design is silent, follows client 6.6: on the CPU, jobs the
    round-robin simulation says would miss their deadline run first (earliest deadline),
    then one job at a time from the project with the largest anticipated short-term debt
    (STD; every job given a CPU, deadline-danger and time-slice ones included, lowers it by
    one scheduling period of the job's CPUs, as 6.x charged every job it scheduled). STD is
    owed/got accounting among projects with runnable CPU jobs, kept at mean zero and
    clamped to one day per CPU; a newly attached project starts at zero, the mean of the
    projects with work at that moment. Coprocessor jobs run in deadline order, as 6.6's scheduler took them "in
    deadline order until all coprocs are full": no debt orders them, so the GPU split is
    made by work fetch, that is by the overall debt.
(d) "Ask for work of that type and don't get any work" is read per type (client 6.6 read it
    as an empty reply). Requests ask for the whole shortfall of each type (``req_secs``) and
    for the idle instances (``req_instances``); a starved project with no shortfall to ask
    for asks for 1 s; ``estimated_delay`` is when the resource would first go idle.

Not modelled: suspension, "no new tasks", and the lower bound 6.6 put on each request (a
project's share of the whole buffer).
"""

from __future__ import annotations

from apps.core.domain.resources import FETCH_ORDER, ProcType
from apps.emulator.domain.backoff import Backoff, backoff_after_no_work, backoff_cleared
from apps.emulator.domain.debt import overall_debt, update_long_term_debts, update_short_term_debts
from apps.emulator.domain.model import DAY
from apps.emulator.domain.policies.base import (
    FetchChoice,
    Usage,
    apply_run_set,
    backoff_wakeup,
    schedule_cpu_by_debt,
)
from apps.emulator.domain.rr_sim import RRResult
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState

_EPS = 1e-9
# Seconds: next_wakeup wakes the client when a resource's idle moment reaches CI or CI+AW,
# where saturated_time equals the bound; counting that moment as a shortfall makes the
# wakeup fetch then instead of at the next poll.
_AT_WAKEUP = 1e-6


class V6GpuPolicy:
    name = "v6-gpu"

    def __init__(self, *, literal_eligibility: bool = False) -> None:
        self.literal_eligibility = literal_eligibility
        self.ltd: dict[ProcType, dict[str, float]] = {}
        self.std: dict[str, float] = {}  # CPU short-term debt
        self.backoff: dict[tuple[str, ProcType], Backoff] = {}

    # -- accounting -------------------------------------------------------------------

    def attach(self, state: ClientState, project: str) -> None:
        for proc in state.proc_types:
            # Zero is the current maximum LTD, so a new project starts debt-free (the work-fetch design).
            self.ltd.setdefault(proc, {})[project] = 0.0
            self.backoff[(project, proc)] = Backoff()
        # Client 6.6 adjusted short-term debts on every scheduling pass, so by the time a new
        # project has work they describe the jobs on the host now. Bring them up to date
        # (a project whose last job has just ended drops out of the mean) and start the
        # newcomer at zero, the mean of the projects with work: in the work-fetch design's Example 2
        # variation B, left alone when A's job ends, is back at zero and C shares at once.
        self.std = self._short_term_debts(state, dt=0.0, used={})
        self.std[project] = 0.0

    def debt_eligible(self, state: ClientState, project: str, proc: ProcType) -> bool:
        """Reading (a): a project with work on the host, or not backed off and below the max."""
        if not self.literal_eligibility and state.has_runnable(project):
            return True
        backoff = self.backoff[(project, proc)]
        return not backoff.is_backed_off(state.now) and not backoff.at_max()

    def account(self, state: ClientState, dt: float, used: Usage) -> None:
        if dt <= 0:
            return
        shares = {p.name: p.resource_share for p in state.attached()}
        for proc in state.proc_types:
            proc_used = {p: used.get((p, proc), 0.0) for p in shares}
            eligible = {p for p in shares if self.debt_eligible(state, p, proc)}
            self.ltd[proc] = update_long_term_debts(
                self.ltd[proc],
                shares=shares,
                used=proc_used,
                eligible=eligible,
                dt=dt,
                ninstances=state.ninstances(proc),
            )
        self.std = self._short_term_debts(state, dt=dt, used=used)

    def _short_term_debts(self, state: ClientState, *, dt: float, used: Usage) -> dict[str, float]:
        shares = {p.name: p.resource_share for p in state.attached()}
        ncpus = state.ninstances(ProcType.CPU)
        return update_short_term_debts(
            self.std,
            shares=shares,
            used={p: used.get((p, ProcType.CPU), 0.0) for p in shares},
            runnable={p for p in shares if state.has_runnable(p, ProcType.CPU)},
            dt=dt,
            ninstances=ncpus,
            max_debt=DAY * ncpus,
        )

    def overall_debt(self, state: ClientState, project: str) -> float:
        speeds = {proc: state.host.relative_speed(proc) for proc in state.proc_types}
        return overall_debt(project, self.ltd, speeds)

    def overall_debts(self, state: ClientState) -> dict[str, float]:
        return {p.name: self.overall_debt(state, p.name) for p in state.attached()}

    def overworked_projects(self, state: ClientState, debts: dict[str, float]) -> set[str]:
        """Reading (b): overall debt more than max(1 day, buffer + slice) of the host below the top."""
        if not debts:
            return set()
        limit = max(DAY, state.prefs.work_buf_total + state.prefs.cpu_scheduling_period)
        host = sum(state.ninstances(p) * state.host.relative_speed(p) for p in state.proc_types)
        top = max(debts.values())
        return {p for p, d in debts.items() if d < top - limit * host}

    # -- work fetch -------------------------------------------------------------------

    def work_fetch(self, state: ClientState) -> FetchChoice | None:
        rr = state.rr_sim(state.prefs.work_buf_total)
        order = [proc for proc in FETCH_ORDER if state.ninstances(proc) > 0]
        ci, total = state.prefs.work_buf_min, state.prefs.work_buf_total
        debts = self.overall_debts(state)
        overworked = self.overworked_projects(state, debts)
        for proc in order:
            if rr.resources[proc].saturated_time < ci + _AT_WAKEUP:
                project = self._best(state, debts, proc, excluded=set())
                if project is not None:
                    return FetchChoice(project, self._request(state, rr, {proc}), "major shortfall")
        for proc in order:
            if rr.resources[proc].saturated_time < total:
                project = self._best(state, debts, proc, excluded=overworked)
                if project is not None:
                    return FetchChoice(project, self._request_all(state, rr, proc), "minor shortfall")
        with_jobs = {j.project for j in state.jobs}
        starved = {p: d for p, d in debts.items() if p not in with_jobs}
        for proc in order:
            project = self._best(state, starved, proc, excluded=overworked)
            if project is not None:
                return FetchChoice(project, self._request_all(state, rr, proc), "starved project")
        return None

    def _best(
        self, state: ClientState, debts: dict[str, float], proc: ProcType, *, excluded: set[str]
    ) -> str | None:
        """The greatest-overall-debt project among ``debts`` not backed off for ``proc``."""
        candidates = [
            p for p in debts if p not in excluded and not self.backoff[(p, proc)].is_backed_off(state.now)
        ]
        if not candidates:
            return None
        return max(candidates, key=lambda p: (debts[p], p))

    def _request(self, state: ClientState, rr: RRResult, procs: set[ProcType]) -> WorkRequest:
        req_secs = {p: max(rr.resources[p].shortfall, 1.0) for p in procs}
        req_instances = {p: rr.resources[p].nidle_now for p in procs}
        delay = {p: rr.resources[p].saturated_time for p in state.proc_types}
        return WorkRequest(req_secs=req_secs, req_instances=req_instances, estimated_delay=delay)

    def _request_all(self, state: ClientState, rr: RRResult, proc: ProcType) -> WorkRequest:
        # "Ask for all types of work for which there is a shortfall", backed off or not.
        procs = {p for p in state.proc_types if rr.resources[p].shortfall > 0} | {proc}
        return self._request(state, rr, procs)

    def handle_reply(self, state: ClientState, choice: FetchChoice, jobs: tuple[SentJob, ...]) -> None:
        handle_resource_backoffs(self.backoff, state, choice, jobs)

    # -- job scheduling ---------------------------------------------------------------

    def schedule(self, state: ClientState, preempt: bool) -> None:
        urgent = state.rr_sim(state.prefs.work_buf_total).deadline_misses
        schedule_cpu_by_debt(state, self.std, preempt=preempt, urgent=urgent, time_slice=True)
        for proc in state.proc_types:
            if proc.is_gpu:
                apply_run_set(state, proc, fill_by_deadline(state, proc, preempt=preempt))

    def next_wakeup(self, state: ClientState) -> float | None:
        """A backoff ending, or a resource's idle moment coming within CI+AW (a minor
        shortfall starts) or within CI (a major one, which may ask an overworked project)."""
        rr = state.rr_sim(state.prefs.work_buf_total)
        times = [b.until for b in self.backoff.values()]
        for low in (state.prefs.work_buf_total, state.prefs.work_buf_min):
            times += [state.now + o.saturated_time - low for o in rr.resources.values()]
        return backoff_wakeup(times, state.now + 1.0)


def fill_by_deadline(state: ClientState, proc: ProcType, *, preempt: bool) -> set[int]:
    """Client 6.6's coprocessor scheduling: jobs in deadline order until the instances are full.

    Without ``preempt`` the running jobs keep their instances. Ties go to a running, then a
    started job, so an equal deadline never preempts.
    """
    capacity = float(state.ninstances(proc))
    chosen: set[int] = set()
    jobs = sorted(state.jobs_for(proc), key=lambda j: (j.deadline, not j.running, not j.started, j.key))
    for job in [j for j in jobs if j.running and not preempt] + jobs:
        if job.key not in chosen and job.usage <= capacity + _EPS:
            chosen.add(job.key)
            capacity -= job.usage
    return chosen


def handle_resource_backoffs(
    backoffs: dict[tuple[str, ProcType], Backoff],
    state: ClientState,
    choice: FetchChoice,
    jobs: tuple[SentJob, ...],
) -> None:
    """The work-fetch design: back off each requested type that got no job; clear each type that got one."""
    got = {job.proc_type for job in jobs}
    for proc in got:
        backoffs[(choice.project, proc)] = backoff_cleared()
    # The host's order, not a set's: each backoff draws from the run's random stream, and a
    # set of enum members iterates in an order that differs between interpreter runs.
    missed = choice.request.requested_types - got
    for proc in (p for p in state.proc_types if p in missed):
        key = (choice.project, proc)
        backoffs[key] = backoff_after_no_work(backoffs[key], now=state.now, u=state.rng.random())
