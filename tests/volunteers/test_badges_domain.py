"""Badge levels and percentiles (pure: no database)."""

from __future__ import annotations

import math

from apps.volunteers.domain.badges import (
    credit_badge_index,
    pct_badge_index,
    percentile_thresholds,
)


def test_the_thresholds_of_a_hundred_values_are_the_1st_5th_and_25th_highest():
    racs = [float(v) for v in range(2, 102)]  # 100 values above 1
    assert percentile_thresholds(racs) == (101.0, 97.0, 77.0)


def test_values_of_1_or_less_neither_count_nor_earn():
    thresholds = percentile_thresholds([0.5, 1.0, 50.0])
    assert thresholds == (50.0, 50.0, 50.0)
    assert pct_badge_index(1.0, (0.0, 0.0, 0.0)) is None


def test_with_no_value_above_1_nobody_reaches_a_percentile():
    assert percentile_thresholds([0.0, 1.0]) == (math.inf, math.inf, math.inf)


def test_the_highest_percentile_reached_is_the_one_earned():
    thresholds = (100.0, 50.0, 10.0)
    assert [pct_badge_index(r, thresholds) for r in (150.0, 60.0, 10.0, 9.0)] == [0, 1, 2, None]


def test_the_highest_credit_level_reached_is_the_one_earned():
    assert [credit_badge_index(t) for t in (2e8, 1e5, 9_999.0)] == [0, 3, None]
