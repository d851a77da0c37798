"""Adaptive replication and reliable hosts: which (host, app version) may run a job alone,
which may take retries in a hurry, and the deadline such a retry gets.

Trust and reliability are per host app version and rest on ``consecutive_valid``, the
number of replicated results in a row that agreed with their quorum (a result never
compared with another does not add to it; an error, timeout or invalid result resets it
to 0, so trust ends at the first failure).

- Trusted: ``consecutive_valid`` at least ``CONS_VALID_UNREPLICATED``, and then, per job, by
  a draw that succeeds with probability 1 - 1/consecutive_valid. The draw keeps a trusted
  host's work compared now and then, more rarely the longer its record, and keeps its
  ``consecutive_valid`` growing (only replicated results count).
- Reliable: ``consecutive_valid`` at least ``CONS_VALID_RELIABLE``; with a turnaround bound
  set and more than ``MIN_HOST_SAMPLES`` turnarounds, an average turnaround within it
  (1.8 times it for platforms other than Windows, Linux and Intel macOS, which have fewer
  hosts); with an error-rate bound set, an error rate within it; and a daily quota not cut
  by failures.
- A result of priority at least ``reliable_on_priority`` (a retry raised by the
  transitioner, or the tail of a batch: apps/work/domain/batch_tails.py) goes to
  reliable hosts with a shorter deadline.
"""

from __future__ import annotations

from dataclasses import dataclass

CONS_VALID_UNREPLICATED = 10
CONS_VALID_RELIABLE = 10
MIN_HOST_SAMPLES = 10  # turnarounds needed before the turnaround bound applies
SLOW_PLATFORM_FACTOR = 1.8


@dataclass(frozen=True, slots=True)
class ReliableConfig:
    """The project's settings (config.xml names); 0 = that condition or feature is off."""

    max_avg_turnaround: float = 0.0
    max_error_rate: float = 0.0
    on_priority: int = 0
    reduced_delay_bound: float = 0.0


@dataclass(frozen=True, slots=True)
class HostVersionRecord:
    """What trust and reliability read from a host app version."""

    consecutive_valid: int = 0
    turnaround_n: float = 0.0
    turnaround_avg: float = 0.0
    error_rate: float = 0.0
    max_jobs_per_day: int = 0  # 0 = not cut yet (starts at the full quota)


def trusted(consecutive_valid: int, draw: float) -> bool:
    """Whether a job may run unreplicated on this host app version; ``draw`` is uniform in [0, 1)."""
    if consecutive_valid < CONS_VALID_UNREPLICATED:
        return False
    return draw >= 1.0 / consecutive_valid


def replicate_on_send(
    *, adaptive: bool, app_target_nresults: int, wu_target_nresults: int, trusted: bool
) -> bool:
    """Whether sending a job raises its workunit to the app's replication: an adaptive app's
    workunit still at one result, sent to a host app version not trusted this time."""
    return adaptive and app_target_nresults > 1 and wu_target_nresults == 1 and not trusted


def turnaround_factor(os_name: str, p_vendor: str) -> float:
    """1 for Windows, Linux and Intel macOS hosts; more for the rarer platforms, whose hosts
    must be given a longer turnaround to find any reliable one."""
    common = "Windows" in os_name or "Linux" in os_name
    mac = "Darwin" in os_name and "Power Macintosh" not in p_vendor
    return 1.0 if common or mac else SLOW_PLATFORM_FACTOR


def reliable(
    record: HostVersionRecord, config: ReliableConfig, *, full_quota: int, factor: float = 1.0
) -> bool:
    """Whether this host app version may take results that need a reliable host.

    ``full_quota``: the daily quota it starts with (0 = no quota); one cut by failures
    below that is not reliable.
    """
    if record.consecutive_valid < CONS_VALID_RELIABLE:
        return False
    if (
        config.max_avg_turnaround > 0
        and record.turnaround_n > MIN_HOST_SAMPLES
        and record.turnaround_avg > config.max_avg_turnaround * factor
    ):
        return False
    if config.max_error_rate > 0 and record.error_rate > config.max_error_rate:
        return False
    return not (full_quota and record.max_jobs_per_day and record.max_jobs_per_day < full_quota)


def needs_reliable(priority: int, config: ReliableConfig) -> bool:
    """Whether a result of this priority should go to a reliable host."""
    return config.on_priority > 0 and priority >= config.on_priority


def reliable_delay_bound(delay_bound: float, config: ReliableConfig, est_duration: float) -> float:
    """The deadline (seconds from sending) of a result that needs a reliable host.

    The delay bound times ``reduced_delay_bound``; when the job is estimated to take more
    than half of that, twice its estimate, provided that is still shorter than both the full
    delay bound and twice the reduced one (otherwise the reduced bound stands).
    """
    if config.reduced_delay_bound <= 0.01 or config.reduced_delay_bound >= 1:
        return delay_bound
    reduced = delay_bound * config.reduced_delay_bound
    doubled = 2 * est_duration
    if reduced < doubled < delay_bound and doubled < 2 * reduced:
        return doubled
    return reduced
