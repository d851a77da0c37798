"""Backoff timers: per (project, resource type) for work fetch, and per project for RPCs.

The work-fetch design: the per-resource interval doubles, up to one day, each time work of that type was
asked for and none came, and is cleared by any job of that type. BOINC starts the doubling
at 600 s and randomises the delay to (0.5 + U) times the interval; the
delay is also capped at the one-day limit here so no backoff ever outlasts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.emulator.domain.model import DAY

MIN_BACKOFF_INTERVAL = 600.0  # WF_MIN_BACKOFF_INTERVAL
MAX_BACKOFF_INTERVAL = DAY  # the work-fetch design doubles it up to one day

# The 4.x client had only a project-wide RPC backoff (SCHED_RETRY_DELAY_MIN/MAX).
MIN_RPC_BACKOFF = 60.0
MAX_RPC_BACKOFF = 4 * 3600.0

# A file transfer's own backoff after a transient failure (PERS_RETRY_DELAY_MIN/MAX), and
# how long the client keeps trying before the transfer fails for good (PERS_GIVEUP).
MIN_TRANSFER_RETRY = 120.0
MAX_TRANSFER_RETRY = 6 * 3600.0
TRANSFER_GIVEUP = 90 * DAY


def transfer_retry_delay(failures: int, u: float) -> float:
    """Seconds before a transfer that failed ``failures`` times in a row is tried again:
    ``MIN_TRANSFER_RETRY`` doubled per failure, capped at ``MAX_TRANSFER_RETRY``, times a
    factor from 0.5 to 1 (``u`` is a uniform draw in [0, 1))."""
    return min(MIN_TRANSFER_RETRY * 2.0**failures, MAX_TRANSFER_RETRY) * (0.5 + 0.5 * u)


@dataclass(frozen=True, slots=True)
class Backoff:
    """A backoff timer: the current doubling interval and the time it ends."""

    interval: float = 0.0
    until: float = 0.0

    def is_backed_off(self, now: float) -> bool:
        return now < self.until

    def at_max(self, max_interval: float = MAX_BACKOFF_INTERVAL) -> bool:
        return self.interval >= max_interval


def backoff_after_no_work(
    backoff: Backoff,
    *,
    now: float,
    u: float,
    min_interval: float = MIN_BACKOFF_INTERVAL,
    max_interval: float = MAX_BACKOFF_INTERVAL,
    max_delay: float | None = None,
) -> Backoff:
    """Double the interval (from ``min_interval``, capped) and back off for a randomised delay.

    ``u`` is a uniform draw in [0, 1) supplied by the caller so the function stays pure. The
    delay is capped at ``max_delay`` (default ``max_interval``); BOINC's client today lets
    it reach 1.5 times the interval.
    """
    interval = min_interval if backoff.interval <= 0 else 2 * backoff.interval
    interval = min(max(interval, min_interval), max_interval)
    delay = min(interval * (0.5 + u), max_interval if max_delay is None else max_delay)
    return Backoff(interval=interval, until=now + delay)


def backoff_cleared() -> Backoff:
    """A job of the type arrived: the type is no longer backed off (the work-fetch design)."""
    return Backoff()
