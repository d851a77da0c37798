"""Load shedding of the scheduler RPC: a saturated server answers "busy" at once.

Without it, RPCs beyond what the server can do queue in front of the web threads and every
reply waits behind them: latency grows without bound, clients time out and retry, and the
retries add load. Here each web process runs at most ``COBBLESTONE_SCHED_SLOTS`` RPCs at a
time (the database and the CPU do the work; more at once only makes each slower). An RPC
that cannot start within ``COBBLESTONE_SCHED_QUEUE_SECONDS`` of arriving is told the server
is busy and to come back after about ``COBBLESTONE_BUSY_DELAY`` seconds, which a BOINC
client honours (``request_delay``), so the load falls to what the server can take.

"Arriving" is when Django got the request, or earlier when a front end (nginx's
``proxy_set_header X-Request-Start "t=${msec}"``) stamps the time it received it: the wait
in front of Django then counts too. gunicorn queues requests for its threads, so
``runall`` and ``bench_scheduler`` run it with ``boincproj.gunicorn_worker.ThreadWorker``,
which stamps that header with the time each request was queued. Give gunicorn a few more
threads than slots: the slots bound the work, the other threads answer "busy" cheaply.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.http import HttpRequest

from apps.protocol import MessagePriority, ReplyMessage, SchedulerReply, render_reply

logger = logging.getLogger(__name__)

BUSY_MESSAGE = "Server is busy; please try again later."
LOG_EVERY_SECONDS = 10.0


class Gate:
    """The RPC slots of this process, and a count of the RPCs turned away."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.semaphore = threading.BoundedSemaphore(slots)
        self.lock = threading.Lock()
        self.shed = 0
        self.logged_at = time.monotonic()

    def count_shed(self) -> None:
        """Count one busy reply; log the count every few seconds (not every reply)."""
        with self.lock:
            self.shed += 1
            now = time.monotonic()
            if now - self.logged_at < LOG_EVERY_SECONDS:
                return
            shed, self.shed, self.logged_at = self.shed, 0, now
        logger.warning(
            "scheduler saturated: %d RPCs told the server is busy in %.0f s", shed, LOG_EVERY_SECONDS
        )


_gate: Gate | None = None
_gate_lock = threading.Lock()


def gate_get() -> Gate | None:
    """This process's gate for the configured number of slots (None: no limit)."""
    global _gate
    slots = settings.COBBLESTONE_SCHED_SLOTS
    if slots <= 0:
        return None
    with _gate_lock:
        if _gate is None or _gate.slots != slots:
            _gate = Gate(slots)
        return _gate


def queued_in_front(header: str, now: float) -> float:
    """Seconds since a front end stamped ``X-Request-Start`` (0 if absent or unreadable).

    Accepts nginx's ``t=1700000000.123`` (seconds) and the integer forms other front ends
    write (milliseconds or microseconds since the epoch).
    """
    value = header.strip().removeprefix("t=")
    try:
        stamp = float(value)
    except ValueError:
        return 0.0
    while stamp > now * 100:  # milliseconds, then microseconds
        stamp /= 1000
    return max(0.0, now - stamp)


@contextmanager
def scheduler_slot(request: HttpRequest) -> Iterator[bool]:
    """Hold one of the process's RPC slots (True), or yield False: answer "busy"."""
    gate = gate_get()
    if gate is None:
        yield True
        return
    waited = queued_in_front(request.headers.get("X-Request-Start", ""), time.time())
    budget = settings.COBBLESTONE_SCHED_QUEUE_SECONDS - waited
    if budget <= 0 or not gate.semaphore.acquire(timeout=budget):
        gate.count_shed()
        yield False
        return
    try:
        yield True
    finally:
        gate.semaphore.release()


def busy_delay() -> float:
    """The request_delay of a busy reply, spread over +50 % so the clients do not return together."""
    return round(settings.COBBLESTONE_BUSY_DELAY * random.uniform(1.0, 1.5))


def busy_reply(delay: float) -> bytes:
    return render_reply(
        SchedulerReply(messages=(ReplyMessage(BUSY_MESSAGE, MessagePriority.LOW),), request_delay=delay)
    )
