"""Error rate, host punishment (daily quota) and turnaround per host_app_version.

CreditNew's design moves error_rate, turnaround and max_results_day from the host
to host_app_version, because one GPU can fail every job while the CPU of the same host
does fine. The quota details follow BOINC where the design is silent:
max_jobs_per_day is stored per device and scaled by the CPU or GPU count when checked;
doubling on success stops at the app's initial value; a crash (and a timeout) costs one
job, never going below 1; an abort costs nothing. BOINC's validator also adds 1 per
valid result without a cap; the design does not ask for it and it is not done here.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from enum import StrEnum

from apps.credit.domain.host_scale import probation_on_failure, probation_on_valid
from apps.credit.domain.policy import SEED_POLICY, CreditPolicy
from apps.credit.domain.stats import ERROR_RATE_INIT, HostAppVersionStats

# Each result moves error_rate this far towards 1 (failure) or 0 (valid): an exponential
# average of failures, as BOINC's pre-2012 host.error_rate.
ERROR_RATE_WEIGHT = 0.05


class JobOutcome(StrEnum):
    """What happened to one of the host's jobs, as far as the host is to blame."""

    SUCCESS = "success"  # the client reported success (validity not known yet)
    CLIENT_ERROR = "client_error"  # the app crashed or the client reported an error
    CLIENT_ABORTED = "client_aborted"  # aborted on the host (user or client)
    TIMEOUT = "timeout"  # no reply by the deadline
    VALID = "valid"
    INVALID = "invalid"


_FAILURES = frozenset({JobOutcome.CLIENT_ERROR, JobOutcome.TIMEOUT, JobOutcome.INVALID})
# Scale probation also counts aborts: cherry picking is discarding, aborting or erroring
# out long jobs (as CreditNew's design defines it), and BOINC's got_error() lists errors, timeouts and invalids.
_PROBATION_FAILURES = _FAILURES | {JobOutcome.CLIENT_ABORTED}


def update_error_rate(error_rate: float, *, failed: bool) -> float:
    """One more result in the host_app_version's exponential average of failures."""
    rate = error_rate if 0 <= error_rate <= 1 else ERROR_RATE_INIT
    return rate * (1 - ERROR_RATE_WEIGHT) + (ERROR_RATE_WEIGHT if failed else 0.0)


def initial_max_jobs_per_day(max_jobs_per_day: int, max_jobs_per_day_init: int) -> int:
    """The stored per-device quota, with 0 meaning "not yet initialised from the app"."""
    return max_jobs_per_day if max_jobs_per_day > 0 else max_jobs_per_day_init


def update_quota(
    hav: HostAppVersionStats, outcome: JobOutcome, *, max_jobs_per_day_init: int
) -> HostAppVersionStats:
    """max_jobs_per_day after a report: doubled on success up to the initial value,
    minus one (not below 1) on a crash or timeout, unchanged otherwise.

    ``max_jobs_per_day_init`` is the app's value (else the project's daily quota); 0 means
    no quota, and then nothing changes.
    """
    if max_jobs_per_day_init <= 0:
        return hav
    mjpd = initial_max_jobs_per_day(hav.max_jobs_per_day, max_jobs_per_day_init)
    if outcome is JobOutcome.SUCCESS:
        mjpd = min(2 * mjpd, max_jobs_per_day_init) if mjpd < max_jobs_per_day_init else mjpd
    elif outcome in (JobOutcome.CLIENT_ERROR, JobOutcome.TIMEOUT):
        mjpd = max(min(mjpd, max_jobs_per_day_init) - 1, 1)
    return replace(hav, max_jobs_per_day=mjpd)


def effective_daily_quota(
    hav: HostAppVersionStats,
    *,
    max_jobs_per_day_init: int,
    is_gpu: bool,
    ncpus: int,
    ngpus: int,
    gpu_multiplier: float = 1.0,
) -> int:
    """Jobs this version may get today: max_jobs_per_day times the CPU count (CPU versions)
    or GPU count * gpu_multiplier (GPU versions). A punished value of 1 is never scaled.
    0 means no quota.
    """
    if max_jobs_per_day_init <= 0:
        return 0
    mjpd = initial_max_jobs_per_day(hav.max_jobs_per_day, max_jobs_per_day_init)
    if mjpd <= 1:
        return 1
    devices = ngpus * gpu_multiplier if is_gpu else ncpus
    return max(int(mjpd * max(devices, 1)), 1)


def roll_daily_count(
    hav: HostAppVersionStats, *, last_rpc_day: date | None, now: float
) -> HostAppVersionStats:
    """n_jobs_today restarts at 0 on the first request of a new UTC day."""
    today = datetime.fromtimestamp(now, UTC).date()
    if last_rpc_day == today:
        return hav
    return replace(hav, n_jobs_today=0)


def count_sent(hav: HostAppVersionStats) -> HostAppVersionStats:
    """One more job sent today (not for resent lost results, as BOINC)."""
    return replace(hav, n_jobs_today=hav.n_jobs_today + 1)


def daily_quota_exceeded(
    hav: HostAppVersionStats,
    *,
    max_jobs_per_day_init: int,
    is_gpu: bool,
    ncpus: int,
    ngpus: int,
    gpu_multiplier: float = 1.0,
) -> bool:
    """Whether the scheduler must send no more jobs of this version to the host today.

    Call it after ``roll_daily_count`` for the request.
    """
    limit = effective_daily_quota(
        hav,
        max_jobs_per_day_init=max_jobs_per_day_init,
        is_gpu=is_gpu,
        ncpus=ncpus,
        ngpus=ngpus,
        gpu_multiplier=gpu_multiplier,
    )
    return limit > 0 and hav.n_jobs_today >= limit


def host_app_version_on_outcome(
    hav: HostAppVersionStats,
    outcome: JobOutcome,
    *,
    now: float,
    delay_bound: float,
    reference_pfc_avg: float,
    max_jobs_per_day_init: int,
    unreplicated: bool = False,
    policy: CreditPolicy = SEED_POLICY,
) -> HostAppVersionStats:
    """Every host_app_version bookkeeping change one outcome causes, except credit.

    quota (``update_quota``); error_rate (failures: error, timeout, invalid; successes:
    valid); scale probation (``probation_on_valid``/``probation_on_failure``); and for a
    timeout, the turnaround average takes the delay bound, as BOINC's transitioner does.
    ``reference_pfc_avg``: app_version.pfc avg, or app.min_avg_pfc for anonymous platform.
    ``unreplicated``: the valid job had a single instance (does not count as consecutive).
    """
    hav = update_quota(hav, outcome, max_jobs_per_day_init=max_jobs_per_day_init)
    if outcome in _FAILURES:
        hav = replace(hav, error_rate=update_error_rate(hav.error_rate, failed=True))
    elif outcome is JobOutcome.VALID:
        hav = replace(hav, error_rate=update_error_rate(hav.error_rate, failed=False))
    if outcome is JobOutcome.VALID:
        hav = probation_on_valid(hav, now=now, unreplicated=unreplicated)
    elif outcome in _PROBATION_FAILURES:
        hav = probation_on_failure(
            hav, reference_pfc_avg=reference_pfc_avg, delay_bound=delay_bound, now=now, policy=policy
        )
    if outcome is JobOutcome.TIMEOUT:
        turnaround, _ = hav.turnaround.update(delay_bound, policy.host_average)
        hav = replace(hav, turnaround=turnaround)
    return hav
