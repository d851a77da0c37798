"""Lean hosts calling in the background: a stream a test can break the server under.

``run_lean`` runs its hosts for a fixed time and returns. A fault-injection test needs the
hosts calling while it restarts and kills parts of the server, figures it can read while
they run, and at the end each host reporting everything it still holds, as clients do
once the server is back:

    stream = LeanStream(hosts, think=(0.5, 1.5))
    stream.start()
    ...                                    # restart the database, kill workers
    stream.stop()
    left = stream.drain(timeout=60)        # jobs some host still holds (0: all reported)
    summary = stream.summary()             # the run's figures (run.summarize)

Each host runs in its own thread: one step (RPC, simulated time with its uploads), then a
wall-clock pause drawn from ``think``, or the host's back-off after an RPC that handled
nothing (``LeanHost.busy_wait``), so the offered load is about ``len(hosts) / mean(think)``
RPCs per second.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

from apps.benchmarks.lean import LeanHost, step_safely
from apps.emulator.live.run import LiveSummary, summarize

# Simulated seconds a draining host runs its queues for: every job it holds finishes.
DRAIN_SECONDS = 1e9


class LeanStream:
    """Lean hosts making RPCs and uploads in background threads until stopped."""

    def __init__(self, hosts: Sequence[LeanHost], *, think: tuple[float, float] = (0.5, 1.5), seed: int = 1):
        if not hosts:
            raise ValueError("a stream needs at least one host")
        self.hosts = list(hosts)
        self.think = think
        self.seed = seed
        self.wall = 0.0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = 0.0

    @property
    def elapsed(self) -> float:
        """Wall seconds since ``start``."""
        return time.monotonic() - self._started if self._started else 0.0

    def rpcs_sent(self) -> int:
        """RPCs sent so far by every host (read while they run)."""
        return sum(host.stats.rpcs_sent for host in self.hosts)

    def start(self) -> None:
        self._started = time.monotonic()
        for host in self.hosts:
            rng = random.Random(f"{self.seed}:{host.index}")
            thread = threading.Thread(target=self._drive, args=(host, rng), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _drive(self, host: LeanHost, rng: random.Random) -> None:
        # Staggered first calls: clients do not all come at once.
        self._stop.wait(rng.uniform(0.0, self.think[1]))
        while not self._stop.is_set() and step_safely(host):
            self._stop.wait(host.pause or rng.uniform(*self.think))

    def stop(self) -> None:
        """Stop every host after its current step; the stream's wall time is fixed here."""
        self._stop.set()
        for thread in self._threads:
            thread.join()
        self.wall = self.elapsed

    def drain(self, *, timeout: float, retry_wait: float = 1.0) -> int:
        """Every host finishes its jobs, uploads their outputs and reports them without asking
        for work, again after ``retry_wait`` until all are acknowledged or ``timeout`` runs
        out; the number of jobs hosts still hold."""
        deadline = time.monotonic() + timeout

        def drain_one(host: LeanHost) -> None:
            try:
                host.advance(DRAIN_SECONDS)
                while host.held and time.monotonic() < deadline:
                    if host.finished:
                        host.rpc(work=False)
                    if host.held:
                        time.sleep(max(retry_wait, host.pause))
                        host.advance(host.upload_wait())  # to the next upload retry
            except Exception as exc:  # a bug or a reply the host cannot use: record it, stop this host
                host.stats.error("host stopped", f"host {host.index}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=drain_one, args=(host,), daemon=True) for host in self.hosts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(host.held for host in self.hosts)

    def close(self) -> None:
        for host in self.hosts:
            host.session.close()

    def summary(self) -> LiveSummary:
        return summarize(self.hosts, self.wall, self.hosts[0].gate)
