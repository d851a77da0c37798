"""Client 6.6 ("v6-gpu"): seed 000's work fetch for CPUs and GPUs, with per-resource debts.

Work fetch follows the seed: a per-(project, resource) backoff; a long-term debt (LTD) per
resource type with debt eligibility, the zero-sum offset and the max-zero offset; an
overall debt weighting each resource's LTD by its speed; and major shortfall, then minor
shortfall, then starved project, each tried on the coprocessors before the CPU.

CPU scheduling (the seed is silent; this follows what the 6.6 client did): each resource
type is scheduled on its own. Jobs the round-robin simulation says would miss their
deadline run first, earliest deadline first. The remaining instances go, one job at a time,
to the project with the largest anticipated short-term debt (STD) for that resource,
preferring its running, then preempted, then earliest-deadline new job; each pick lowers
the project's anticipated STD by one scheduling period of the job's instances. STD is
owed/got accounting among the projects that have runnable jobs for the resource, kept at
mean zero and clamped to one day per instance.

Debt eligibility is the seed's rule: a project is eligible for a resource only while it is
not backed off for it and its backoff interval is below the one-day maximum (suspension
and "no new tasks" are not modelled). Requests ask for the whole shortfall of each type
(``req_secs``) and for the idle instances (``req_instances``); a starved project with no
shortfall to ask for asks for 1 s. The server's ``estimated_delay`` is the time until the
resource would first go idle.

Measured consequence (tests/emulator/test_examples.py): these rules split Example 1's GPU
about 50/50, not 75/25. A GPU-only project reaches the maximum CPU backoff within about two
days and drops out of CPU debt, so its rival's CPU time stops counting in the overall debt;
asking a project for "all types with a shortfall" keeps its GPU queue stocked whenever it
is asked for CPU work; and the per-resource STD splits a resource evenly between the
projects that have jobs for it.
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
    fill_resource,
)
from apps.emulator.domain.rr_sim import RRResult
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState, SimJob


class V6GpuPolicy:
    name = "v6-gpu"

    def __init__(self) -> None:
        self.ltd: dict[ProcType, dict[str, float]] = {}
        self.std: dict[ProcType, dict[str, float]] = {}
        self.backoff: dict[tuple[str, ProcType], Backoff] = {}

    # -- accounting -------------------------------------------------------------------

    def attach(self, state: ClientState, project: str) -> None:
        for proc in state.proc_types:
            # Zero is the current maximum LTD, so a new project starts debt-free (seed 000).
            self.ltd.setdefault(proc, {})[project] = 0.0
            self.std.setdefault(proc, {})[project] = 0.0
            self.backoff[(project, proc)] = Backoff()

    def debt_eligible(self, state: ClientState, project: str, proc: ProcType) -> bool:
        backoff = self.backoff[(project, proc)]
        return not backoff.is_backed_off(state.now) and not backoff.at_max()

    def account(self, state: ClientState, dt: float, used: Usage) -> None:
        if dt <= 0:
            return
        shares = {p.name: p.resource_share for p in state.attached()}
        pairs = state.runnable_pairs()
        for proc in state.proc_types:
            n = state.ninstances(proc)
            proc_used = {p: used.get((p, proc), 0.0) for p in shares}
            eligible = {p for p in shares if self.debt_eligible(state, p, proc)}
            self.ltd[proc] = update_long_term_debts(
                self.ltd[proc], shares=shares, used=proc_used, eligible=eligible, dt=dt, ninstances=n
            )
            runnable = {p for p in shares if (p, proc) in pairs}
            self.std[proc] = update_short_term_debts(
                self.std[proc],
                shares=shares,
                used=proc_used,
                runnable=runnable,
                dt=dt,
                ninstances=n,
                max_debt=DAY * n,
            )

    def overall_debt(self, state: ClientState, project: str) -> float:
        speeds = {proc: state.host.relative_speed(proc) for proc in state.proc_types}
        return overall_debt(project, self.ltd, speeds)

    def _overall_debts(self, state: ClientState) -> dict[str, float]:
        return {p.name: self.overall_debt(state, p.name) for p in state.attached()}

    def overworked(self, state: ClientState, project: str, proc: ProcType) -> bool:
        # As client 6.6: owing more than max(one day, buffer + one time slice) per instance.
        limit = max(DAY, state.prefs.work_buf_total + state.prefs.cpu_scheduling_period)
        return self.ltd[proc][project] < -limit * state.ninstances(proc)

    # -- work fetch -------------------------------------------------------------------

    def work_fetch(self, state: ClientState) -> FetchChoice | None:
        rr = state.rr_sim(state.prefs.work_buf_total)
        order = [proc for proc in FETCH_ORDER if state.ninstances(proc) > 0]
        ci, total = state.prefs.work_buf_min, state.prefs.work_buf_total
        debts = self._overall_debts(state)
        for proc in order:
            if rr.resources[proc].saturated_time < ci:
                project = self._best(state, debts, proc, allow_overworked=True)
                if project is not None:
                    return FetchChoice(project, self._request(state, rr, {proc}), "major shortfall")
        for proc in order:
            if rr.resources[proc].saturated_time < total:
                project = self._best(state, debts, proc, allow_overworked=False)
                if project is not None:
                    return FetchChoice(project, self._request_all(state, rr, proc), "minor shortfall")
        with_jobs = {j.project for j in state.jobs}
        starved = {p: d for p, d in debts.items() if p not in with_jobs}
        for proc in order:
            project = self._best(state, starved, proc, allow_overworked=False)
            if project is not None:
                return FetchChoice(project, self._request_all(state, rr, proc), "starved project")
        return None

    def _best(
        self, state: ClientState, debts: dict[str, float], proc: ProcType, *, allow_overworked: bool
    ) -> str | None:
        """The greatest-overall-debt project among ``debts`` not backed off for ``proc``."""
        candidates = [
            p
            for p in debts
            if not self.backoff[(p, proc)].is_backed_off(state.now)
            and (allow_overworked or not self.overworked(state, p, proc))
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

    # -- CPU scheduling ---------------------------------------------------------------

    def schedule(self, state: ClientState, preempt: bool) -> None:
        urgent = state.rr_sim(state.prefs.work_buf_total).deadline_misses
        period = state.prefs.cpu_scheduling_period
        for proc in state.proc_types:
            anticipated = dict(self.std[proc])

            def pick(projects: set[str], anticipated: dict[str, float] = anticipated) -> str:
                return max(projects, key=lambda p: (anticipated.get(p, 0.0), p))

            def charge(job: SimJob, anticipated: dict[str, float] = anticipated) -> None:
                anticipated[job.project] = anticipated.get(job.project, 0.0) - period * job.usage

            chosen = fill_resource(
                state,
                proc,
                preempt=preempt,
                keep=lambda j: state.now - j.slice_start < period,
                urgent=urgent,
                pick_project=pick,
                on_pick=charge,
            )
            apply_run_set(state, proc, chosen)

    def next_wakeup(self, state: ClientState) -> float | None:
        rr = state.rr_sim(state.prefs.work_buf_total)
        low = state.prefs.work_buf_total
        times = [b.until for b in self.backoff.values()]
        times += [state.now + o.saturated_time - low for o in rr.resources.values()]
        return backoff_wakeup(times, state.now + 1.0)


def handle_resource_backoffs(
    backoffs: dict[tuple[str, ProcType], Backoff],
    state: ClientState,
    choice: FetchChoice,
    jobs: tuple[SentJob, ...],
) -> None:
    """Seed 000: back off each requested type that got no job; clear each type that got one."""
    got = {job.proc_type for job in jobs}
    for proc in got:
        backoffs[(choice.project, proc)] = backoff_cleared()
    for proc in choice.request.requested_types - got:
        key = (choice.project, proc)
        backoffs[key] = backoff_after_no_work(backoffs[key], now=state.now, u=state.rng.random())
