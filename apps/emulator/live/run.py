"""Running many live hosts at once, in accelerated or free-running simulated time.

Each host runs in its own thread with its own keep-alive connection. In *paced* mode
simulated time follows the wall clock times ``speedup`` (3600 = one simulated hour per
real second): the hosts behave like real clients, only faster. In *free-running* mode
(``speedup=None``) each host jumps straight to its next event, so every host makes its
RPCs back to back: that is the load generator behind ``bench_scheduler``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from apps.emulator.domain.model import ClientPrefs
from apps.emulator.live.host import LiveHost
from apps.emulator.live.rpc import HostHardware, HostStats
from apps.emulator.live.wire import HttpSession, Session, UploadGate

# A few simulated hours need a small buffer: about an hour and a half of work.
LIVE_PREFS = ClientPrefs(
    work_buf_min=0.04 * 86400,
    work_buf_additional=0.03 * 86400,
    cpu_scheduling_period=3600.0,
    poll_interval=600.0,
)
POLICY_CYCLE = ("rec", "v6-gpu", "v4")


@dataclass(frozen=True, slots=True)
class LiveConfig:
    """What to run: where, how many hosts (their hardware), which policy, for how long.

    ``policy`` is "rec", "v6-gpu", "v4" or "mixed" (hosts take the three in turn).
    ``sim_hours`` bounds simulated time; ``max_seconds`` bounds wall-clock time.
    """

    master_url: str
    hardware: tuple[HostHardware, ...]
    authenticators: tuple[str, ...]
    policy: str = "rec"
    sim_hours: float = 3.0
    speedup: float | None = 1200.0
    max_seconds: float = 600.0
    uploads: bool = True
    report_delay: float = 1800.0  # simulated seconds a finished task may wait for an RPC
    prefs: ClientPrefs = LIVE_PREFS
    timeout: float = 60.0
    seed: int = 1


@dataclass(frozen=True, slots=True)
class LiveSummary:
    hosts: int
    wall_seconds: float
    sim_hours: float
    rpcs: int
    jobs_received: int
    results_reported: int
    results_acked: int
    uploads: int
    upload_note: str
    errors: tuple[str, ...]
    latencies: tuple[float, ...] = field(repr=False)
    busy: int = 0  # replies that said the server is busy
    rpcs_sent: int = 0  # RPCs sent, answered or not (``rpcs`` counts the answered ones)
    error_kinds: tuple[tuple[str, int], ...] = ()  # ``errors`` counted by kind, most frequent first

    @property
    def ok(self) -> bool:
        """No protocol or transport error, and every reported result was acknowledged."""
        return not self.errors and self.results_reported == self.results_acked

    @property
    def rpcs_per_second(self) -> float:
        return self.rpcs / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def jobs_per_second(self) -> float:
        return self.jobs_received / self.wall_seconds if self.wall_seconds > 0 else 0.0

    def latency(self, percentile: float) -> float:
        """The RPC latency (seconds) at ``percentile`` (0-100), nearest-rank."""
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        rank = max(math.ceil(percentile / 100 * len(ordered)), 1)
        return ordered[min(rank, len(ordered)) - 1]


class _Clock:
    """Simulated time for paced mode (shared by all hosts) or free-running mode."""

    def __init__(self, speedup: float | None) -> None:
        self.speedup = speedup
        self.start = time.monotonic()

    def wait_until(self, t: float, stop: threading.Event) -> float:
        if self.speedup is None:
            return t
        stop.wait(max(self.start + t / self.speedup - time.monotonic(), 0.0))
        return max((time.monotonic() - self.start) * self.speedup, t if not stop.is_set() else 0.0)


def make_hosts(
    config: LiveConfig, gate: UploadGate, session: Callable[[], Session] = HttpSession
) -> list[LiveHost]:
    if len(config.authenticators) < len(config.hardware):
        raise ValueError("one authenticator per host is needed")
    return [
        LiveHost(
            index=i,
            hardware=hardware,
            master_url=config.master_url,
            authenticator=config.authenticators[i],
            policy=POLICY_CYCLE[i % 3] if config.policy == "mixed" else config.policy,
            prefs=config.prefs,
            gate=gate,
            session=session(),
            report_delay=config.report_delay,
            seed=config.seed,
        )
        for i, hardware in enumerate(config.hardware)
    ]


def run_live(config: LiveConfig) -> LiveSummary:
    """Run every host until ``sim_hours`` of simulated time or ``max_seconds`` have passed."""
    gate = UploadGate(config.uploads)
    clock = _Clock(config.speedup)
    stop = threading.Event()
    end = config.sim_hours * 3600.0
    hosts = make_hosts(config, gate, lambda: HttpSession(timeout=config.timeout))
    wall = run_threads([HostDriver(h, clock, end, stop).run for h in hosts], stop, config.max_seconds)
    for host in hosts:
        host.session.close()
    return summarize(hosts, wall, gate)


def run_threads(targets: Sequence[Callable[[], None]], stop: threading.Event, max_seconds: float) -> float:
    """Run each target in its own thread; set ``stop`` after ``max_seconds``; wall seconds taken."""
    threads = [threading.Thread(target=target, daemon=True) for target in targets]
    timer = threading.Timer(max_seconds, stop.set)
    timer.daemon = True
    started = time.monotonic()
    timer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    timer.cancel()
    return time.monotonic() - started


class HostDriver:
    """Moves one host through simulated time: ``step`` handles its next event."""

    def __init__(self, host: LiveHost, clock: _Clock, end: float, stop: threading.Event) -> None:
        self.host = host
        self.clock = clock
        self.end = end
        self.stop = stop
        self.period = host.state.prefs.cpu_scheduling_period
        self.next_sched = self.period
        self.started = False

    @property
    def done(self) -> bool:
        return self.stop.is_set() or self.host.state.now >= self.end

    def step(self) -> None:
        host = self.host
        try:
            if not self.started:
                self.started = True
                host.decide(preempt=True)
                return
            target = min(host.next_event(self.end), self.next_sched)
            reached = min(self.clock.wait_until(target, self.stop), self.end)
            if self.stop.is_set():
                return
            host.advance(reached)
            preempt = reached >= self.next_sched - 1e-6
            if preempt:
                self.next_sched = reached + self.period
            if reached < self.end:
                host.decide(preempt=preempt)
            elif host.finished:
                host.rpc(None)  # report what is left, as a client does before it is detached
        except Exception as exc:  # a bug or a reply the host cannot use: record it, stop this host
            host.stats.error("host stopped", f"host {host.index}: {type(exc).__name__}: {exc}")
            host.state.now = self.end

    def run(self) -> None:
        while not self.done:
            self.step()


class SummarizedHost(Protocol):
    """What ``summarize`` reads of a host: a live host or a lean one (lean.py)."""

    @property
    def index(self) -> int: ...

    @property
    def stats(self) -> HostStats: ...

    @property
    def sim_time(self) -> float: ...


def summarize(hosts: Sequence[SummarizedHost], wall: float, gate: UploadGate) -> LiveSummary:
    """The run's figures; a result sent to two hosts is an error (the scheduler's double dispatch)."""
    stats = [h.stats for h in hosts]
    seen: dict[str, int] = {}
    twice = []
    for host in hosts:
        for name in host.stats.received:
            if name in seen:
                twice.append(f"{name} was sent to host {seen[name]} and host {host.index}")
            seen[name] = host.index
    kinds: dict[str, int] = {"result sent twice": len(twice)} if twice else {}
    for s in stats:
        for kind, count in s.error_kinds.items():
            kinds[kind] = kinds.get(kind, 0) + count
    return LiveSummary(
        hosts=len(hosts),
        wall_seconds=wall,
        sim_hours=max((h.sim_time for h in hosts), default=0.0) / 3600.0,
        rpcs=sum(s.rpcs for s in stats),
        jobs_received=sum(s.jobs_received for s in stats),
        results_reported=sum(s.results_reported for s in stats),
        results_acked=sum(s.results_acked for s in stats),
        uploads=sum(s.uploads for s in stats),
        upload_note=gate.reason,
        errors=tuple(e for s in stats for e in s.errors) + tuple(twice),
        latencies=tuple(x for s in stats for x in s.latencies),
        busy=sum(s.busy for s in stats),
        rpcs_sent=sum(s.rpcs_sent for s in stats),
        error_kinds=tuple(sorted(kinds.items(), key=lambda item: (-item[1], item[0]))),
    )


def format_summary(summary: LiveSummary, *, title: str = "") -> str:
    """A plain-text report of one live run."""
    rows = [
        ("hosts", f"{summary.hosts}"),
        ("simulated hours", f"{summary.sim_hours:.2f}"),
        ("wall seconds", f"{summary.wall_seconds:.1f}"),
        ("scheduler RPCs", f"{summary.rpcs}"),
        ("RPCs/s", f"{summary.rpcs_per_second:.1f}"),
        ("jobs dispatched", f"{summary.jobs_received}"),
        ("jobs dispatched/s", f"{summary.jobs_per_second:.1f}"),
        ("results reported", f"{summary.results_reported}"),
        ("results acknowledged", f"{summary.results_acked}"),
        (
            "outputs uploaded",
            f"{summary.uploads}" + (f" ({summary.upload_note})" if summary.upload_note else ""),
        ),
        (
            "latency p50 / p90 / p99 (ms)",
            " / ".join(f"{summary.latency(p) * 1000:.1f}" for p in (50, 90, 99)),
        ),
        ("'server busy' replies", f"{summary.busy}"),
        ("errors", f"{len(summary.errors)}"),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [title] if title else []
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"  error: {e}" for e in summary.errors[:10]]
    if len(summary.errors) > 10:
        lines.append(f"  ... and {len(summary.errors) - 10} more errors")
    return "\n".join(lines)
