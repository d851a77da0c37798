"""Error rate, host punishment (daily quota) and turnaround per host_app_version."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apps.core.domain.average import Average, AverageVar
from apps.credit.domain import (
    CreditPolicy,
    HostAppVersionStats,
    JobOutcome,
    count_sent,
    daily_quota_exceeded,
    effective_daily_quota,
    host_app_version_on_outcome,
    roll_daily_count,
    update_error_rate,
    update_quota,
)

INIT = 200
NOW = datetime(2025, 3, 10, 12, 0, tzinfo=UTC).timestamp()
DAY = 86400.0


def quota(mjpd):
    return HostAppVersionStats(max_jobs_per_day=mjpd)


def test_uninitialised_quota_starts_from_the_apps_value():
    assert (
        update_quota(quota(0), JobOutcome.CLIENT_ABORTED, max_jobs_per_day_init=INIT).max_jobs_per_day == INIT
    )


def test_crash_decrements_the_quota():
    assert update_quota(quota(50), JobOutcome.CLIENT_ERROR, max_jobs_per_day_init=INIT).max_jobs_per_day == 49


def test_crash_never_takes_the_quota_below_one():
    assert update_quota(quota(1), JobOutcome.CLIENT_ERROR, max_jobs_per_day_init=INIT).max_jobs_per_day == 1


def test_abort_does_not_decrement_the_quota():
    assert (
        update_quota(quota(50), JobOutcome.CLIENT_ABORTED, max_jobs_per_day_init=INIT).max_jobs_per_day == 50
    )


def test_timeout_decrements_the_quota():
    assert update_quota(quota(50), JobOutcome.TIMEOUT, max_jobs_per_day_init=INIT).max_jobs_per_day == 49


def test_success_doubles_the_quota():
    assert update_quota(quota(50), JobOutcome.SUCCESS, max_jobs_per_day_init=INIT).max_jobs_per_day == 100


def test_success_doubling_stops_at_the_initial_quota():
    assert update_quota(quota(150), JobOutcome.SUCCESS, max_jobs_per_day_init=INIT).max_jobs_per_day == INIT


def test_no_app_quota_leaves_the_record_alone():
    h = quota(5)
    assert update_quota(h, JobOutcome.CLIENT_ERROR, max_jobs_per_day_init=0) is h


def test_cpu_quota_is_scaled_by_cpu_count():
    limit = effective_daily_quota(quota(10), max_jobs_per_day_init=INIT, is_gpu=False, ncpus=8, ngpus=2)
    assert limit == 80


def test_gpu_quota_is_scaled_by_gpu_count_and_multiplier():
    limit = effective_daily_quota(
        quota(10), max_jobs_per_day_init=INIT, is_gpu=True, ncpus=8, ngpus=2, gpu_multiplier=3.0
    )
    assert limit == 60


def test_punished_quota_of_one_is_not_scaled():
    assert effective_daily_quota(quota(1), max_jobs_per_day_init=INIT, is_gpu=False, ncpus=8, ngpus=0) == 1


def test_new_utc_day_resets_jobs_today():
    h = HostAppVersionStats(n_jobs_today=12)
    assert roll_daily_count(h, last_rpc_day=datetime(2025, 3, 9).date(), now=NOW).n_jobs_today == 0


def test_same_utc_day_keeps_jobs_today():
    h = HostAppVersionStats(n_jobs_today=12)
    assert roll_daily_count(h, last_rpc_day=datetime(2025, 3, 10).date(), now=NOW).n_jobs_today == 12


def test_sending_counts_a_job_today():
    assert count_sent(HostAppVersionStats(n_jobs_today=2)).n_jobs_today == 3


def test_quota_is_exceeded_at_the_limit():
    h = HostAppVersionStats(max_jobs_per_day=2, n_jobs_today=4)
    assert daily_quota_exceeded(h, max_jobs_per_day_init=INIT, is_gpu=False, ncpus=2, ngpus=0) is True


def test_quota_is_not_exceeded_below_the_limit():
    h = HostAppVersionStats(max_jobs_per_day=2, n_jobs_today=3)
    assert daily_quota_exceeded(h, max_jobs_per_day_init=INIT, is_gpu=False, ncpus=2, ngpus=0) is False


def test_no_quota_is_never_exceeded():
    h = HostAppVersionStats(n_jobs_today=10**6)
    assert daily_quota_exceeded(h, max_jobs_per_day_init=0, is_gpu=False, ncpus=1, ngpus=0) is False


def test_failure_moves_error_rate_towards_one():
    assert update_error_rate(0.1, failed=True) == pytest.approx(0.145, rel=1e-15)


def test_valid_result_moves_error_rate_towards_zero():
    assert update_error_rate(0.1, failed=False) == pytest.approx(0.095, rel=1e-15)


def outcome(h, o, **kw):
    args = {
        "now": NOW,
        "delay_bound": DAY,
        "reference_pfc_avg": 6.0,
        "max_jobs_per_day_init": INIT,
        "policy": CreditPolicy(),
    }
    return host_app_version_on_outcome(h, o, **(args | kw))


def test_timeout_adds_the_delay_bound_to_turnaround():
    h = outcome(HostAppVersionStats(), JobOutcome.TIMEOUT)
    assert h.turnaround == AverageVar(n=1, avg=DAY, var=0.0, q=0.0)


def test_valid_outcome_clears_probation_and_lowers_error_rate():
    h = outcome(HostAppVersionStats(), JobOutcome.VALID)
    assert (h.scale_probation, h.consecutive_valid) == (False, 1)
    assert h.error_rate == pytest.approx(0.095, rel=1e-15)


def test_invalid_outcome_resets_consecutive_valid_and_raises_error_rate():
    h = outcome(HostAppVersionStats(consecutive_valid=5, error_rate=0.0), JobOutcome.INVALID)
    assert (h.consecutive_valid, h.error_rate) == (0, 0.05)


def test_client_error_with_probation_on_starts_probation():
    h = HostAppVersionStats(pfc=Average(n=20, avg=2.0), scale_probation=False)
    h = outcome(h, JobOutcome.CLIENT_ERROR, policy=CreditPolicy(host_scale_check=True))
    assert (h.scale_probation, h.host_scale_time, h.pfc.avg) == (True, NOW + DAY, 6.0)


def test_client_abort_with_probation_on_starts_probation_but_keeps_quota():
    h = HostAppVersionStats(max_jobs_per_day=7, scale_probation=False)
    h = outcome(h, JobOutcome.CLIENT_ABORTED, policy=CreditPolicy(host_scale_check=True))
    assert (h.scale_probation, h.max_jobs_per_day) == (True, 7)
