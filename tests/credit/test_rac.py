"""Recent average credit: exponential decay with a one-week half-life."""

from __future__ import annotations

import math

import pytest

from apps.credit.domain import CREDIT_HALF_LIFE, decay_rac, update_rac

T0 = 1_700_000_000.0
DAY = 86400.0


def test_first_update_is_work_per_day_since_the_job_was_sent():
    assert update_rac(0.0, 0.0, 100.0, T0, work_start_time=T0 - 2 * DAY) == (50.0, T0)


def test_first_update_without_a_start_time_uses_the_small_interval_limit():
    avg, _ = update_rac(0.0, 0.0, 100.0, T0)
    assert avg == math.log(2) * 100.0 * DAY / CREDIT_HALF_LIFE


def test_one_half_life_without_work_halves_the_average():
    avg, avg_time = decay_rac(80.0, T0, T0 + CREDIT_HALF_LIFE)
    assert avg == pytest.approx(40.0, rel=1e-15)
    assert avg_time == T0 + CREDIT_HALF_LIFE


def test_work_is_spread_over_the_days_since_the_last_update():
    avg, _ = update_rac(0.0, T0, 100.0, T0 + CREDIT_HALF_LIFE)
    assert avg == pytest.approx(0.5 * 100.0 / 7, rel=1e-12)


def test_steady_work_converges_to_credit_per_day():
    avg, t = 0.0, 0.0
    for day in range(1, 200):
        avg, t = update_rac(avg, t, 30.0, T0 + day * DAY, work_start_time=T0 + (day - 1) * DAY)
    assert avg == pytest.approx(30.0, rel=1e-6)


def test_updates_within_a_moment_use_the_limit_form():
    avg, _ = update_rac(10.0, T0, 5.0, T0 + 1e-3)
    decay = math.exp(-1e-3 * math.log(2) / CREDIT_HALF_LIFE)
    assert avg == pytest.approx(10.0 * decay + math.log(2) * 5.0 * DAY / CREDIT_HALF_LIFE, rel=1e-12)


def test_clock_going_backwards_counts_as_no_time():
    avg, _ = decay_rac(10.0, T0, T0 - DAY)
    assert avg == 10.0


def test_decay_before_any_update_keeps_the_average():
    assert decay_rac(0.0, 0.0, T0) == (0.0, T0)


def test_decay_to_a_time_before_the_last_update_keeps_the_newer_average():
    # update_stats took its time, then a validator granted credit before the row's turn came.
    assert decay_rac(10.0, T0 + 60, T0) == (10.0, T0 + 60)
