"""One emulated host in live mode: a client policy driving real scheduler RPCs.

The host keeps what a BOINC client keeps for one project (host id, RPC sequence number,
code-signing key, its queue of jobs) and reuses the emulator's policies and job model:
each job from a reply becomes a ``SimJob`` whose speed comes from the reply's app version
``flops`` and whose size is the workunit's ``rsc_fpops_est`` (the true size varies around
it), so the policy's round-robin simulation, work fetch and scheduling run unchanged.
Time is simulated: ``advance`` moves the jobs to a given simulated second.
"""

from __future__ import annotations

import random
import time
from typing import Unpack

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import ClientPrefs, ProjectSpec
from apps.emulator.domain.policies import ClientPolicy, FetchChoice, make_policy
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState, SimJob, SimProject
from apps.emulator.live.rpc import (
    HostIdentity,
    RpcFailed,
    WireHost,
    WireJob,
    check_reply,
    reply_jobs,
)
from apps.protocol import SchedulerReply, SchedulerRequest

PROJECT = "live"  # the one project every live host is attached to
RETRY_DELAY = 60.0  # simulated seconds before an RPC is retried (BOINC's minimum RPC backoff)
_DONE = 1e-6


class LiveHost(WireHost):
    """One host's client state and its conversation with the scheduler."""

    def __init__(
        self,
        *,
        policy: str,
        prefs: ClientPrefs,
        report_delay: float,
        **identity: Unpack[HostIdentity],
    ) -> None:
        super().__init__(**identity)
        self.report_delay = report_delay
        spec = ProjectSpec(name=PROJECT, resource_share=100.0, apps=())
        self.state = ClientState(
            host=self.hardware.spec(),
            prefs=prefs,
            projects={PROJECT: SimProject(spec=spec, attached=True)},
            rng=random.Random(f"{self.seed}:{self.index}:policy"),
        )
        self.policy: ClientPolicy = make_policy(policy, prefs)
        self.policy.attach(self.state, PROJECT)
        self.not_before = 0.0  # simulated time before which the server asked not to be contacted
        self.wire: dict[int, WireJob] = {}
        self.uploading: list[WireJob] = []  # finished, some output not uploaded yet
        self.finished: list[tuple[float, WireJob]] = []  # (ready time, job), not yet acknowledged
        self._next_key = 0

    @property
    def sim_time(self) -> float:
        return self.state.now

    # -- time -------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Run the jobs from ``state.now`` to simulated time ``t``; finished jobs upload their
        outputs, uploads whose backoff has passed go again, and jobs uploaded await report."""
        if t > self.state.now:
            self._run(t)
        waiting = []
        for wire in self.uploading:
            if self.upload_outputs(wire, self.state.now):
                self.finished.append((self.state.now, wire))
            else:
                waiting.append(wire)
        self.uploading = waiting

    def _run(self, t: float) -> None:
        state = self.state
        dt = t - state.now
        used: dict[tuple[str, ProcType], float] = {}
        done: list[SimJob] = []
        for job in state.jobs:
            if not job.running:
                continue
            run = min(dt, job.time_to_finish)
            job.done_fpops += job.flops * run
            self.wire[job.key].elapsed += run
            key = (job.project, job.proc_type)
            used[key] = used.get(key, 0.0) + job.usage * run
            if job.time_to_finish <= _DONE:
                done.append(job)
        state.now = t
        self.policy.account(state, dt, used)
        for job in done:
            state.remove_job(job)
            self.uploading.append(self.wire.pop(job.key))

    def next_event(self, end: float) -> float:
        """The next simulated time something happens: a job ends, a backoff or delay ends..."""
        now = self.state.now
        times = [end, now + self.state.prefs.poll_interval]
        times += [now + j.time_to_finish for j in self.state.jobs if j.running]
        wakeup = self.policy.next_wakeup(self.state)
        if wakeup is not None:
            times.append(wakeup)
        if self.not_before > now:
            times.append(self.not_before)
        times += [job.upload_retry_at for job in self.uploading]
        if self.finished:
            times.append(max(self.finished[0][0] + self.report_delay, self.not_before))
        return max(min(times), now + _DONE)

    def decide(self, *, preempt: bool) -> None:
        """Make the RPC the policy or a due report asks for, then schedule the jobs."""
        now = self.state.now
        choice = self.policy.work_fetch(self.state) if now >= self.not_before else None
        report_due = bool(self.finished) and now >= self.finished[0][0] + self.report_delay
        if choice is not None or (report_due and now >= self.not_before):
            self.rpc(choice)
        self.policy.schedule(self.state, preempt)

    # -- the RPC ----------------------------------------------------------------------

    def rpc(self, choice: FetchChoice | None) -> SchedulerReply | None:
        # A report-only RPC asks for nothing, in the policy's own request style.
        work = (
            choice.request if choice is not None else WorkRequest(rsc_spec_request=self.policy.name != "v4")
        )
        reports = [job for _, job in self.finished]
        try:
            reply = self.exchange(self.request(work, reports))
        except RpcFailed as exc:
            self._failed(exc)
            return None
        self._check_reply(reply, reports)
        self.not_before = self.state.now + (reply.request_delay or 0.0)
        if self.finished:  # something was not acknowledged: retry later, as BOINC's RPC backoff does
            self.not_before = max(self.not_before, self.state.now + RETRY_DELAY)
        sent = self._accept(reply)
        if choice is not None or sent:
            self.policy.handle_reply(self.state, choice or FetchChoice(PROJECT, work, "report"), sent)
        return reply

    def request(self, work: WorkRequest, reports: list[WireJob]) -> SchedulerRequest:
        """A scheduler request shaped like 7.20.5's, asking for ``work``."""
        return self.build_request(
            prefs=self.state.prefs,
            work=work,
            reports=reports,
            in_progress=(w.result_name for w in (*self.wire.values(), *self.uploading, *reports)),
        )

    def _check_reply(self, reply: SchedulerReply, reports: list[WireJob]) -> None:
        acked = check_reply(self.stats, reply, reports)
        # Acknowledged results are done; the others are reported again next time, as BOINC does.
        self.finished = [(t, job) for t, job in self.finished if job.result_name not in acked]

    def _failed(self, error: RpcFailed) -> None:
        self.stats.error(error.kind, str(error))
        self.not_before = self.state.now + RETRY_DELAY
        return None

    def _accept(self, reply: SchedulerReply) -> tuple[SentJob, ...]:
        """Queue the reply's jobs; return them as the policy's ``SentJob`` values."""
        sent = []
        for job in reply_jobs(reply, self.stats):
            proc, usage = job.proc_type, job.usage
            if self.state.ninstances(proc) == 0:
                self.stats.error(
                    "rpc: job for a missing device",
                    f"{job.result.name}: sent for a {proc.value} this host lacks",
                )
                continue
            flops = job.version.flops or self.hardware.cpu_flops * usage
            fpops_est = job.fpops_est
            deadline = self.state.now + max(job.result.report_deadline - time.time(), 0.0)
            sent_job = SentJob(
                app=job.workunit.app_name,
                proc_type=proc,
                usage=min(usage, float(self.state.ninstances(proc))),
                fpops=fpops_est * self.rng.uniform(0.8, 1.2),
                fpops_est=fpops_est,
                deadline=deadline,
            )
            self._next_key += 1
            self.state.add_job(
                SimJob(
                    key=self._next_key,
                    project=PROJECT,
                    app=sent_job.app,
                    proc_type=proc,
                    usage=sent_job.usage,
                    fpops=sent_job.fpops,
                    fpops_est=fpops_est,
                    flops=flops,
                    deadline=deadline,
                    received=self.state.now,
                )
            )
            self.wire[self._next_key] = job.wire()
            sent.append(sent_job)
        self.stats.jobs_received += len(sent)
        self.stats.received.extend(w.result_name for w in list(self.wire.values())[-len(sent) :] if sent)
        return tuple(sent)
