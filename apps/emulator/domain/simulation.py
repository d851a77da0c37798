"""Discrete-event simulation of one host attached to several in-process projects.

Time jumps from one event to the next: a job finishing, a project being attached, an app
appearing on a server, a backoff ending, the round-robin simulation's predicted moment a
buffer runs low, a work-fetch poll (``poll_interval``) or a scheduling period boundary.
Between events the set of running jobs is fixed, so progress, usage and debt or REC are
exact for the whole step; that is what lets a simulated year run in about a second.

At each event: unstarted jobs past their deadline are dropped (the client aborts them),
work fetch runs (one RPC at a time until the policy is satisfied), then the scheduler; at a
scheduling period boundary it may preempt, otherwise it only fills idle instances. When the
run ends, a job still on the host past its deadline counts as missed (started) or aborted.

Simplifications (stated, not hidden): the host is always on and connected, projects are
always up, RPCs and file transfers take no time, a completed job is reported at once, and
GPU jobs use no CPU.
"""

from __future__ import annotations

import random

from apps.core.domain.resources import ProcType
from apps.emulator.domain.figures import Recorder, SimulationReport
from apps.emulator.domain.model import DAY, PolicyName, Scenario
from apps.emulator.domain.policies import ClientPolicy, make_policy
from apps.emulator.domain.server import SentJob, SimServer
from apps.emulator.domain.state import ClientState, SimJob, SimProject

_DONE = 1e-6  # seconds: a job this close to its end has finished (float rounding)


def run_scenario(
    scenario: Scenario, policy: PolicyName | str | ClientPolicy, *, days: float | None = None
) -> SimulationReport:
    """Simulate ``scenario`` under ``policy`` ("v4", "v6-gpu" or "rec") and report on it.

    ``policy`` may also be a fresh policy object (e.g. a variant built with other options);
    policies keep per-run state, so an object serves one run. ``days`` overrides the
    scenario's duration. The run is deterministic: the same scenario (including its seed)
    and policy always give the same report.
    """
    duration = scenario.duration if days is None else days * DAY
    if isinstance(policy, str):
        policy = make_policy(PolicyName(policy), scenario.prefs)
    return _Simulation(scenario, policy, duration).run()


class _Simulation:
    def __init__(self, scenario: Scenario, policy: ClientPolicy, duration: float) -> None:
        self.scenario = scenario
        self.end = duration
        self.state = ClientState(
            host=scenario.host,
            prefs=scenario.prefs,
            projects={p.name: SimProject(spec=p) for p in scenario.projects},
            rng=random.Random(scenario.seed),
        )
        self.servers = {
            p.name: SimServer(p, scenario.host, random.Random(f"{scenario.seed}:{p.name}"))
            for p in scenario.projects
        }
        self.policy = policy
        self.recorder = Recorder(scenario, policy.name, duration)
        self.next_key = 0
        self.external_events = sorted(
            {p.attach_at for p in scenario.projects if p.attach_at > 0}
            | {a.available_from for p in scenario.projects for a in p.apps if a.available_from > 0}
        )

    def run(self) -> SimulationReport:
        prefs = self.scenario.prefs
        self._attach_due()
        self._decide(preempt=True)
        next_sched = prefs.cpu_scheduling_period
        next_poll = prefs.poll_interval
        while self.state.now < self.end:
            t = min(self.end, next_sched, next_poll, self._next_event())
            self._advance(t)
            self._attach_due()
            preempt = t >= next_sched - _DONE
            if preempt:
                next_sched = t + prefs.cpu_scheduling_period
            if t >= next_poll - _DONE:
                next_poll = t + prefs.poll_interval
            if t < self.end:
                self._decide(preempt)
        self._close()
        return self.recorder.report()

    def _close(self) -> None:
        """The run ends with jobs still on the host: one already past its deadline can only be
        late (missed, its FLOPs so far wasted) or, never started, aborted as ``_decide`` would."""
        for job in self.state.jobs:
            if self.state.now <= job.deadline + _DONE:
                continue
            if job.started:
                self.recorder.missed_unfinished(job.done_fpops)
            else:
                self.recorder.n_aborted += 1

    def _next_event(self) -> float:
        now = self.state.now
        times = [now + j.time_to_finish for j in self.state.jobs if j.running]
        times += [t for t in self.external_events if t > now]
        wakeup = self.policy.next_wakeup(self.state)
        if wakeup is not None:
            times.append(wakeup)
        return min(times, default=self.end)

    def _advance(self, t: float) -> None:
        state = self.state
        start, dt = state.now, t - state.now
        used: dict[tuple[str, ProcType], float] = {}
        finished: list[SimJob] = []
        for job in state.jobs:
            if not job.running:
                continue
            job.done_fpops += job.flops * dt
            key = (job.project, job.proc_type)
            used[key] = used.get(key, 0.0) + job.usage * dt
            if job.time_to_finish <= _DONE:
                finished.append(job)
        state.now = t
        self.recorder.advance(start, t, used)
        self.policy.account(state, dt, used)
        for job in finished:
            state.remove_job(job)
            self.recorder.completed(job.fpops, t, job.deadline)

    def _attach_due(self) -> None:
        for project in self.state.projects.values():
            if not project.attached and project.spec.attach_at <= self.state.now:
                project.attached = True
                self.policy.attach(self.state, project.name)
                self.recorder.attach(project.name, self.state.now)
                for queued in project.spec.queued_jobs:
                    self._add_job(
                        project.name,
                        SentJob(
                            app=queued.app,
                            proc_type=queued.proc_type,
                            usage=queued.usage,
                            fpops=queued.fpops,
                            fpops_est=queued.fpops,
                            deadline=self.state.now + queued.deadline,
                        ),
                    )

    def _add_job(self, project: str, sent: SentJob) -> None:
        rsc = self.scenario.host.resource(sent.proc_type)
        if rsc is None:
            return
        self.next_key += 1
        self.state.add_job(
            SimJob(
                key=self.next_key,
                project=project,
                app=sent.app,
                proc_type=sent.proc_type,
                usage=sent.usage,
                fpops=sent.fpops,
                fpops_est=sent.fpops_est,
                flops=rsc.flops * sent.usage,
                deadline=sent.deadline,
                received=self.state.now,
            )
        )

    def _decide(self, preempt: bool) -> None:
        state = self.state
        for job in [j for j in state.jobs if not j.started and state.now > j.deadline]:
            state.remove_job(job)
            self.recorder.n_aborted += 1
        for _ in range(len(state.projects) + 2):
            choice = self.policy.work_fetch(state)
            if choice is None:
                break
            jobs = self.servers[choice.project].handle_request(choice.request, now=state.now)
            self.recorder.n_rpcs += 1
            self.recorder.n_received += len(jobs)
            for sent in jobs:
                self._add_job(choice.project, sent)
            self.policy.handle_reply(state, choice, jobs)
        self.policy.schedule(state, preempt)
