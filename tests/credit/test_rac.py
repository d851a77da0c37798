"""Recent average credit: exponential decay with a one-week half-life."""

from __future__ import annotations

import math

import pytest

from apps.credit.domain import CREDIT_HALF_LIFE, decay_rac, update_rac

T0 = 1_700_000_000.0
DAY = 86400.0


IMPULSE = math.log(2) * DAY / CREDIT_HALF_LIFE  # what one credit adds at once


def test_first_update_adds_the_grants_impulse():
    assert update_rac(0.0, 0.0, 100.0, T0) == (100.0 * IMPULSE, T0)


def test_one_half_life_without_work_halves_the_average():
    avg, avg_time = decay_rac(80.0, T0, T0 + CREDIT_HALF_LIFE)
    assert avg == pytest.approx(40.0, rel=1e-15)
    assert avg_time == T0 + CREDIT_HALF_LIFE


def test_a_grant_decays_the_old_average_then_adds_its_impulse():
    avg, _ = update_rac(80.0, T0, 100.0, T0 + CREDIT_HALF_LIFE)
    assert avg == pytest.approx(40.0 + 100.0 * IMPULSE, rel=1e-12)


def test_steady_work_converges_to_credit_per_day():
    avg, t = 0.0, 0.0
    for day in range(1, 200):
        avg, t = update_rac(avg, t, 30.0, T0 + day * DAY)
    # Just after each day's grant; the day's mean of the decaying average is 30.
    after_grant = 30.0 * IMPULSE / (1 - 0.5 ** (DAY / CREDIT_HALF_LIFE))
    assert avg == pytest.approx(after_grant, rel=1e-6)
    assert 30.0 < avg < 30.0 * 1.06


def test_a_teams_average_is_the_sum_of_its_members_whatever_the_update_times():
    team = (0.0, 0.0)
    members = {"ada": (0.0, 0.0), "grace": (0.0, 0.0)}
    grants = [("ada", T0, 90.0), ("grace", T0 + 3600, 40.0), ("ada", T0 + 2 * DAY, 10.0)]
    for who, when, work in grants:
        members[who] = update_rac(*members[who], work, when)
        team = update_rac(*team, work, when)
    end = T0 + 3 * DAY
    summed = sum(decay_rac(*row, end)[0] for row in members.values())
    assert decay_rac(*team, end)[0] == pytest.approx(summed, rel=1e-12)


def test_clock_going_backwards_counts_as_no_time():
    avg, _ = decay_rac(10.0, T0, T0 - DAY)
    assert avg == 10.0


def test_decay_before_any_update_keeps_the_average():
    assert decay_rac(0.0, 0.0, T0) == (0.0, T0)


def test_decay_to_a_time_before_the_last_update_keeps_the_newer_average():
    # update_stats took its time, then a validator granted credit before the row's turn came.
    assert decay_rac(10.0, T0 + 60, T0) == (10.0, T0 + 60)
