"""Lean hosts: cheap load for ``bench_scheduler``.

A ``LiveHost`` runs a client's policies (round-robin simulation, work fetch) and costs
about 14 ms of CPU per RPC in the load generator: CPU taken from the server it measures
when both share a machine. A lean host keeps only what the scheduler sees: its ids, a
FIFO queue per resource and a free-running simulated clock. Between two RPCs it moves a
fixed simulated interval, during which its instances run the queued jobs in order; each
RPC reports the jobs that finished, names the others and asks for enough work to fill its
buffer, new-style (``req_secs``/``req_instances`` per resource). The request, the reports
and the checks on the reply are the live host's (rpc.py), so the server sees the same
clients; only what happens between RPCs is simpler.

As the stock client does, a finished job is reported only once its outputs are uploaded: an
upload the server could not take now (no connection, an HTTP error, "try later") is tried
again once its backoff has passed in simulated time (the first time the host's clock moves
past it), and one it refused for good makes the job a failed one. After an RPC
that handled nothing (no usable reply, "project is down", "busy") the host waits
``busy_wait`` wall seconds, standing for the client's back-off.

    summary = run_lean(LeanConfig(master_url=url, hardware=tuple(varied_hardware(40)),
                                  authenticators=keys, max_seconds=30))
"""

from __future__ import annotations

import functools
import heapq
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Unpack

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import ClientPrefs
from apps.emulator.domain.server import WorkRequest
from apps.emulator.live.rpc import (
    HostHardware,
    HostIdentity,
    ReplyJob,
    RpcFailed,
    WireHost,
    WireJob,
    check_reply,
    reply_jobs,
)
from apps.emulator.live.run import LiveSummary, run_threads, summarize
from apps.emulator.live.wire import HttpSession, Session, UploadGate
from apps.protocol import SchedulerReply

# A buffer of 0.05 + 0.05 days, as bench_scheduler's emulated hosts keep.
LEAN_PREFS = ClientPrefs(work_buf_min=0.05 * 86400, work_buf_additional=0.05 * 86400)
INTERVAL = 1800.0  # simulated seconds between two RPCs of a host
_EPS = 1e-9


@dataclass(slots=True)
class QueuedJob:
    """A job in a resource's queue; ``wire.elapsed`` holds its whole runtime."""

    wire: WireJob
    usage: float  # instances it occupies while it runs
    remaining: float  # seconds of runtime left


def run_fifo(queue: list[QueuedJob], instances: float, seconds: float) -> list[QueuedJob]:
    """Run ``queue`` on ``instances`` for ``seconds``, first come first served.

    A job starts as soon as enough instances are free and nothing ahead of it waits. The
    finished jobs leave ``queue`` and are returned in the order they ended; the others
    stay, in order, with their remaining time reduced. O(n log n) in the queue's length.
    """
    free = instances
    running: list[tuple[float, int]] = []  # (finish time, position in queue), a heap
    done: list[int] = []
    started = 0
    now = 0.0
    while True:
        while started < len(queue) and queue[started].usage <= free + _EPS:
            job = queue[started]
            heapq.heappush(running, (now + job.remaining, started))
            free -= job.usage
            started += 1
        if not running or running[0][0] > seconds:
            break
        now, position = heapq.heappop(running)
        free += queue[position].usage
        done.append(position)
    for finish, position in running:
        queue[position].remaining = finish - seconds
    finished = [queue[position] for position in done]
    gone = set(done)
    queue[:] = [job for position, job in enumerate(queue) if position not in gone]
    return finished


def resource_request(queue: Sequence[QueuedJob], instances: float, buffer: float) -> tuple[float, float]:
    """(req_secs, req_instances) for one resource: fill ``buffer`` seconds on every instance.

    The queue's instance-seconds of work are subtracted from the buffer; an instance no
    job occupies is idle (queued jobs start at once while instances are free).
    """
    queued = sum(job.remaining * job.usage for job in queue)
    busy = sum(job.usage for job in queue)
    return max(0.0, buffer * instances - queued), max(0.0, instances - busy)


class LeanHost(WireHost):
    """One host's ids, job queues and conversation with the scheduler; no client policy."""

    def __init__(
        self,
        *,
        prefs: ClientPrefs = LEAN_PREFS,
        interval: float = INTERVAL,
        **identity: Unpack[HostIdentity],
    ) -> None:
        super().__init__(**identity)
        self.prefs = prefs
        self.interval = interval
        self.instances = {ProcType.CPU: float(self.hardware.ncpus)}
        if self.hardware.ngpus:
            self.instances[ProcType.NVIDIA] = float(self.hardware.ngpus)
        self.queues: dict[ProcType, list[QueuedJob]] = {proc: [] for proc in self.instances}
        self.uploading: list[WireJob] = []  # finished, some output not uploaded yet
        self.finished: list[WireJob] = []  # reported when the next RPC is made, until acknowledged
        self.request_delay = 0.0
        self.sim_time = 0.0
        self.busy_wait = 0.0  # wall seconds to wait after a "busy" reply (see LeanConfig)
        self.pause = 0.0  # the wait the last reply asks for, in wall seconds

    def step(self) -> None:
        """One RPC, then the simulated time until the next (longer if the server asked)."""
        self.rpc()
        self.advance(max(self.interval, self.request_delay))

    def advance(self, seconds: float) -> None:
        """Run the queues for ``seconds``; finished jobs upload their outputs, and uploads
        whose backoff has passed go again; a job is reported once they are done."""
        self.sim_time += seconds
        for proc, queue in self.queues.items():
            for job in run_fifo(queue, self.instances[proc], seconds):
                self.uploading.append(job.wire)
        waiting = []
        for wire in self.uploading:
            if self.upload_outputs(wire, self.sim_time):
                self.finished.append(wire)
            else:
                waiting.append(wire)
        self.uploading = waiting

    def upload_wait(self) -> float:
        """Simulated seconds until the next upload is due to be tried again (0 if none waits)."""
        return max(0.0, min((job.upload_retry_at for job in self.uploading), default=0.0) - self.sim_time)

    @property
    def held(self) -> int:
        """Jobs the host still holds: queued or running, uploading, or not acknowledged."""
        return sum(len(queue) for queue in self.queues.values()) + len(self.uploading) + len(self.finished)

    def work_request(self) -> WorkRequest:
        """A new-style request for every resource, from what its queue holds."""
        secs: dict[ProcType, float] = {}
        instances: dict[ProcType, float] = {}
        buffer = self.prefs.work_buf_total
        for proc, queue in self.queues.items():
            secs[proc], instances[proc] = resource_request(queue, self.instances[proc], buffer)
        return WorkRequest(req_secs=secs, req_instances=instances)

    def rpc(self, *, work: bool = True) -> SchedulerReply | None:
        """Report, ask for work (unless ``work`` is false), check the reply and queue its
        jobs; None if the RPC failed."""
        reports = list(self.finished)
        queued = [job.wire.result_name for queue in self.queues.values() for job in queue]
        request = self.build_request(
            prefs=self.prefs,
            work=self.work_request() if work else WorkRequest(),
            reports=reports,
            in_progress=[*queued, *(job.result_name for job in (*self.uploading, *reports))],
        )
        try:
            reply = self.exchange(request)
        except RpcFailed as exc:
            self.stats.error(exc.kind, str(exc))
            self.pause = self.busy_wait
            return None
        busy_before = self.stats.busy
        acked = check_reply(self.stats, reply, reports)
        handled_nothing = self.stats.busy > busy_before or reply.project_is_down
        self.pause = self.busy_wait if handled_nothing else 0.0
        # The others are reported again next time, as BOINC does.
        self.finished = [job for job in self.finished if job.result_name not in acked]
        self.request_delay = reply.request_delay or 0.0
        for job in reply_jobs(reply, self.stats):
            self._queue(job)
        return reply

    def _queue(self, job: ReplyJob) -> None:
        instances = self.instances.get(job.proc_type, 0.0)
        if not instances:
            self.stats.error(
                "rpc: job for a missing device",
                f"{job.result.name}: sent for a {job.proc_type.value} this host lacks",
            )
            return
        hardware_flops = self.hardware.gpu_flops if job.proc_type != ProcType.CPU else self.hardware.cpu_flops
        flops = job.version.flops or hardware_flops * job.usage
        wire = job.wire()
        wire.elapsed = job.fpops_est * self.rng.uniform(0.8, 1.2) / flops
        self.queues[job.proc_type].append(QueuedJob(wire, min(job.usage, instances), wire.elapsed))
        self.stats.jobs_received += 1
        self.stats.received.append(wire.result_name)


@dataclass(frozen=True, slots=True)
class LeanConfig:
    """Where, how many hosts (their hardware), for how long; ``interval`` is simulated seconds."""

    master_url: str
    hardware: tuple[HostHardware, ...]
    authenticators: tuple[str, ...]
    max_seconds: float = 60.0
    interval: float = INTERVAL
    prefs: ClientPrefs = LEAN_PREFS
    uploads: bool = False
    timeout: float = 60.0
    seed: int = 1
    # Wall seconds a host waits after a "busy" reply. Free-running hosts otherwise call again
    # at once; a real client waits the reply's request_delay (minutes), which a run of
    # seconds cannot show, so this stands for it.
    busy_wait: float = 0.0


def make_lean_hosts(
    config: LeanConfig, gate: UploadGate, session: Callable[[], Session] = HttpSession
) -> list[LeanHost]:
    if len(config.authenticators) < len(config.hardware):
        raise ValueError("one authenticator per host is needed")
    return [
        LeanHost(
            index=i,
            hardware=hardware,
            master_url=config.master_url,
            authenticator=config.authenticators[i],
            session=session(),
            gate=gate,
            prefs=config.prefs,
            interval=config.interval,
            seed=config.seed,
        )
        for i, hardware in enumerate(config.hardware)
    ]


def run_lean(config: LeanConfig) -> LiveSummary:
    """Every host makes RPCs back to back, each in its own thread, for ``max_seconds``."""
    gate = UploadGate(config.uploads)
    stop = threading.Event()
    hosts = make_lean_hosts(config, gate, lambda: HttpSession(timeout=config.timeout))
    for host in hosts:
        host.busy_wait = config.busy_wait
    wall = run_threads([functools.partial(_drive, host, stop) for host in hosts], stop, config.max_seconds)
    for host in hosts:
        host.session.close()
    return summarize(hosts, wall, gate)


def step_safely(host: LeanHost) -> bool:
    """``host.step()``; False, with the error recorded, if it raised (the host then stops)."""
    try:
        host.step()
    except Exception as exc:  # a bug or a reply the host cannot use: record it, stop this host
        host.stats.error("host stopped", f"host {host.index}: {type(exc).__name__}: {exc}")
        return False
    return True


def _drive(host: LeanHost, stop: threading.Event) -> None:
    while not stop.is_set() and step_safely(host):
        if host.pause:
            stop.wait(host.pause)
