"""Today's client ("rec", BOINC 7+): recent estimated credit and hysteresis.

Debt is replaced by REC, an exponentially weighted average (half-life 10 days by default)
of the credit each project's jobs would earn at peak speed, counting a coprocessor at its
speed relative to the CPU. A project's priority is minus its fraction of the total REC
divided by its fraction of the resource shares.

Work fetch follows the client's ``choose_project``: it acts only when some resource would go
idle within ``work_buf_min`` (hysteresis, checked a second after the buffer falls below it).
Projects are scanned by priority less their queued work over the full buffer, resources in
a fixed order (CPU first): a project claims each resource it may ask for until it reaches
one whose buffer is low; it then asks for that one and for every other resource below
``work_buf_total`` that no higher project claimed, even one it is backed off from. So a
project with a new GPU app learns of it as soon as it is asked for anything, not only when
its GPU backoff ends. A finished job is reported an hour later, and that RPC also asks for
each resource below the full buffer that no strictly higher project could be asked for. A
type asked for and not got is backed off unless it already was: the interval doubles from
10 minutes to a day, the wait is 0.5 to 1.5 times the interval.

Scheduling: coprocessors first, then the CPU; per resource type, jobs in deadline danger
first (earliest deadline), then running jobs inside their own time slice, then jobs taken
one at a time from the highest-priority project (the first in attach order on a tie). Each
pick raises that project's temporary REC by about an hour of the host's credit scaled by
the job's part of the host's peak speed, against sums taken before the first pick (a zero
REC sum counts as one), which interleaves projects. Any job past its time slice may be
preempted at any decision.

Not modelled: max_concurrent, GPU exclusions, the one-second first-contact request, the
zero-share project's one-instance fetch, and the ``fetchable_share`` term of
``req_instances`` (this asks for the idle instances). A coprocessor's credit uses the
scenario's FLOPS as given, not the real client's assumed 20% GPU efficiency.
"""

from __future__ import annotations

import math

from apps.core.domain.resources import COBBLESTONE_SCALE, FETCH_ORDER, ProcType
from apps.emulator.domain.backoff import MAX_BACKOFF_INTERVAL, Backoff, backoff_after_no_work, backoff_cleared
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

MIN_WORK_BUF = 180.0  # WF_EST_FETCH_TIME: work_buf_min is never below this
REPORT_DELAY = 3600.0  # MAX_REPORT_DELAY: a finished job is reported at most this long after
FINISHED = 1e-6  # seconds left at which the simulation counts a job as finished


def update_rec(rec: float, credit: float, dt: float, half_life: float) -> float:
    """One step of the exponential average of credit per day (BOINC's update_average form)."""
    if dt <= 0:
        return rec
    weight = math.exp(-dt * math.log(2) / half_life)
    return rec * weight + (1 - weight) * credit / dt * DAY


def project_priority(rec: float, rec_sum: float, share: float, share_sum: float) -> float:
    """``-rec_frac / share_frac``; a zero-share project always comes last."""
    rec_frac = rec / rec_sum if rec_sum > 0 else 0.0
    if share <= 0 or share_sum <= 0:
        return -1000.0 - rec_frac
    return -rec_frac / (share / share_sum)


class RecPolicy:
    name = "rec"

    def __init__(self) -> None:
        self.rec: dict[str, float] = {}
        self.backoff: dict[tuple[str, ProcType], Backoff] = {}
        self.report_due: dict[str, float] = {}

    def attach(self, state: ClientState, project: str) -> None:
        self.rec[project] = 0.0
        for proc in state.proc_types:
            self.backoff[(project, proc)] = Backoff()

    def account(self, state: ClientState, dt: float, used: Usage) -> None:
        flops = {r.proc_type: r.flops for r in state.host.resources}
        for p in state.attached():
            credit = sum(used.get((p.name, proc), 0.0) * flops[proc] * COBBLESTONE_SCALE for proc in flops)
            self.rec[p.name] = update_rec(self.rec[p.name], credit, dt, state.prefs.rec_half_life)
        for job in state.jobs:
            if job.running and job.time_to_finish <= FINISHED:
                self.report_due.setdefault(job.project, state.now + REPORT_DELAY)

    def priorities(self, state: ClientState, projects: list[str], rec: dict[str, float]) -> dict[str, float]:
        shares = {p: state.projects[p].resource_share for p in projects}
        rec_sum = sum(rec[p] for p in projects)
        share_sum = sum(shares.values())
        return {p: project_priority(rec[p], rec_sum, shares[p], share_sum) for p in projects}

    # -- work fetch -------------------------------------------------------------------

    def work_fetch(self, state: ClientState) -> FetchChoice | None:
        prefs = state.prefs
        buf_min = max(prefs.work_buf_min, MIN_WORK_BUF)
        buf_total = max(prefs.work_buf_total, buf_min)
        rr = state.rr_sim(buf_total)
        procs = [p for p in FETCH_ORDER if state.ninstances(p) > 0]
        names = [p.name for p in state.attached()]
        priority = self.priorities(state, names, self.rec)
        peak = state.host.total_peak_flops
        for name in names:
            # The fetch priority also counts the work already queued for the project.
            queued = sum(max(j.fpops_est - j.done_fpops, 0.0) for j in state.jobs if j.project == name)
            priority[name] -= queued / (buf_total * peak)
        # Stable: projects of equal priority keep their attach order.
        ranked = sorted(names, key=lambda p: -priority[p])
        due = sorted((t, p) for p, t in self.report_due.items() if t <= state.now)
        if due:
            return self._report(state, rr, procs, ranked, priority, due[0][1], buf_total)
        low = [p for p in procs if rr.resources[p].saturated_time < buf_min]
        if not low:
            return None
        # The client's scan: each project in priority order claims every resource it may ask
        # for, up to the first one whose buffer is low; a lower project may add a resource
        # to its request only if no higher one claimed it.
        claimed: dict[ProcType, str] = {}
        for name in ranked:
            trigger = None
            for proc in procs:
                if not self._can_fetch(state, name, proc):
                    continue
                claimed.setdefault(proc, name)
                if rr.resources[proc].saturated_time < buf_min:
                    trigger = proc
                    break
            if trigger is None:
                continue
            # A resource below the full buffer joins the request even while backed off:
            # asking costs nothing once the RPC is made.
            asked = {
                proc
                for proc in procs
                if proc is trigger
                or (
                    claimed.get(proc, name) == name
                    and rr.resources[proc].saturated_time < buf_total
                    and state.projects[name].resource_share > 0
                )
            }
            return FetchChoice(name, self._request(state, rr, asked), "buffer low")
        return None

    def _report(
        self,
        state: ClientState,
        rr: RRResult,
        procs: list[ProcType],
        ranked: list[str],
        priority: dict[str, float],
        name: str,
        buf_total: float,
    ) -> FetchChoice:
        """The RPC that reports finished jobs also asks for each resource below the full
        buffer that no project of strictly higher priority could be asked for."""
        del self.report_due[name]
        higher = [p for p in ranked[: ranked.index(name)] if priority[p] != priority[name]]
        asked = {
            proc
            for proc in procs
            if rr.resources[proc].saturated_time < buf_total
            and state.projects[name].resource_share > 0
            and not any(self._can_fetch(state, p, proc) for p in higher)
        }
        return FetchChoice(name, self._request(state, rr, asked), "report results")

    def _can_fetch(self, state: ClientState, project: str, proc: ProcType) -> bool:
        return state.projects[project].resource_share > 0 and not self.backoff[(project, proc)].is_backed_off(
            state.now
        )

    def _request(self, state: ClientState, rr: RRResult, procs: set[ProcType]) -> WorkRequest:
        # In a fixed order: a set of enum members iterates by string hash, which differs
        # between interpreter runs, and the server fills the request in the order given.
        ordered = [p for p in FETCH_ORDER if p in procs]
        req_secs = {p: max(rr.resources[p].shortfall, 1.0) for p in ordered}
        req_instances = {p: rr.resources[p].nidle_now for p in ordered}
        delay = {p: rr.resources[p].saturated_time for p in state.proc_types}
        return WorkRequest(req_secs=req_secs, req_instances=req_instances, estimated_delay=delay)

    def handle_reply(self, state: ClientState, choice: FetchChoice, jobs: tuple[SentJob, ...]) -> None:
        """Clear each type that got a job; back off each asked-for type that got none, unless
        it was already backed off (asked for only along with another type)."""
        got = {job.proc_type for job in jobs}
        for proc in state.proc_types:
            key = (choice.project, proc)
            if proc in got:
                self.backoff[key] = backoff_cleared()
            elif proc in choice.request.requested_types and not self.backoff[key].is_backed_off(state.now):
                self.backoff[key] = backoff_after_no_work(
                    self.backoff[key],
                    now=state.now,
                    u=state.rng.random(),
                    max_delay=1.5 * MAX_BACKOFF_INTERVAL,
                )

    # -- CPU scheduling ---------------------------------------------------------------

    def schedule(self, state: ClientState, preempt: bool) -> None:
        prefs = state.prefs
        urgent = state.rr_sim(max(prefs.work_buf_total, MIN_WORK_BUF)).deadline_misses
        period = prefs.cpu_scheduling_period
        peak = state.host.total_peak_flops
        flops = {r.proc_type: r.flops for r in state.host.resources}
        order = list(state.projects)
        runnable = sorted({j.project for j in state.jobs}, key=order.index)
        temp_rec = {p: self.rec[p] for p in runnable}
        # As the client: the fractions use the sums taken before any job is picked (a REC
        # sum of zero counts as one), so each pick's bump moves only its own project.
        rec_sum = sum(temp_rec.values()) or 1.0
        share_sum = sum(state.projects[p].resource_share for p in runnable)

        def pick(projects: set[str]) -> str:
            def priority(p: str) -> float:
                return project_priority(temp_rec[p], rec_sum, state.projects[p].resource_share, share_sum)

            # The first project in attach order wins a tie.
            return max(sorted(projects, key=order.index), key=priority)

        def bump(job: SimJob) -> None:
            # About one hour of credit at the job's part of the host's peak speed.
            temp_rec[job.project] += flops[job.proc_type] * job.usage / peak * rec_sum / 24

        # Coprocessors first, then the CPU, as the client builds its run list; a job
        # inside its time slice stays, any other may be preempted at any decision.
        for proc in sorted(state.proc_types, key=lambda p: p is ProcType.CPU):
            chosen = fill_resource(
                state,
                proc,
                preempt=True,
                keep=lambda j: state.now - j.slice_start < period,
                urgent=urgent,
                pick_project=pick,
                on_pick=bump,
            )
            apply_run_set(state, proc, chosen)

    def next_wakeup(self, state: ClientState) -> float | None:
        buf_min = max(state.prefs.work_buf_min, MIN_WORK_BUF)
        rr = state.rr_sim(max(state.prefs.work_buf_total, buf_min))
        times = [b.until for b in self.backoff.values()]
        times += list(self.report_due.values())
        # A running job's time slice ends while a job of its type waits: it may take its place.
        waiting = {j.proc_type for j in state.jobs if not j.running}
        period = state.prefs.cpu_scheduling_period
        times += [j.slice_start + period for j in state.jobs if j.running and j.proc_type in waiting]
        # A second after a buffer falls below work_buf_min, where work fetch acts.
        times += [state.now + o.saturated_time - buf_min + 1.0 for o in rr.resources.values()]
        return backoff_wakeup(times, state.now + 1.0)
