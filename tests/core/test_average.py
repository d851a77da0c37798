"""The running average of CreditNew's design."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.core.domain.average import (
    APP_VERSION_AVERAGE,
    HOST_AVERAGE,
    Average,
    AverageParams,
    AverageVar,
)

# Samples within 5x of each other never reach the host cap (10x), so the mean is plain.
uncapped = st.lists(st.floats(min_value=1.0, max_value=5.0), min_size=1, max_size=10)


def feed(avg, samples, params=HOST_AVERAGE):
    for s in samples:
        avg, _ = avg.update(s, params)
    return avg


def test_first_sample_becomes_the_average():
    avg, truncated = Average().update(7.0, HOST_AVERAGE)
    assert avg == Average(n=1, avg=7.0)
    assert truncated is False


def test_first_sample_is_never_capped():
    avg, truncated = Average().update(1e30, HOST_AVERAGE)
    assert avg.avg == 1e30
    assert truncated is False


@given(uncapped)
def test_first_n_samples_give_the_straight_mean(samples):
    avg = feed(Average(), samples)
    assert avg.n == len(samples)
    assert math.isclose(avg.avg, statistics.fmean(samples), rel_tol=1e-12)


def test_nth_sample_is_still_part_of_the_straight_mean():
    avg = feed(Average(), [2.0] * 9 + [12.0])
    assert avg.n == 10
    assert avg.avg == 3.0


def test_samples_after_n_use_the_exponential_weight():
    avg = feed(Average(), [4.0] * 10)
    new, _ = avg.update(6.0, HOST_AVERAGE)
    assert new.avg == 4.0 + 0.01 * (6.0 - 4.0)
    assert new.n == 11


@given(st.floats(min_value=0.5, max_value=5.0), st.floats(min_value=0.0, max_value=50.0))
def test_exponential_update_moves_by_weight_times_delta(start, sample):
    avg = Average(n=200, avg=start)
    new, _ = avg.update(sample, APP_VERSION_AVERAGE)
    assert new.avg == start + APP_VERSION_AVERAGE.weight * (sample - start)


def test_sample_over_limit_is_capped_at_limit_times_average():
    avg, truncated = Average(n=1, avg=2.0).update(1000.0, HOST_AVERAGE)
    assert truncated is True
    assert avg.avg == 2.0 + (20.0 - 2.0) / 2


@given(st.floats(min_value=0.1, max_value=1e6), st.floats(min_value=0.0, max_value=1e300))
def test_average_never_exceeds_limit_times_previous_average(start, sample):
    params = AverageParams(n_threshold=10, weight=0.01, limit=10)
    new, _ = Average(n=3, avg=start).update(sample, params)
    assert new.avg <= start * params.limit


@pytest.mark.parametrize("sample", [-1.0, math.nan, math.inf, -math.inf])
def test_negative_and_non_finite_samples_are_rejected(sample):
    avg = Average(n=4, avg=3.0)
    new, truncated = avg.update(sample, HOST_AVERAGE)
    assert new is avg
    assert truncated is True


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_average_stays_finite_and_non_negative_for_any_sample(sample):
    new, _ = Average(n=5, avg=2.0).update(sample, HOST_AVERAGE)
    assert math.isfinite(new.avg)
    assert new.avg >= 0


def test_above_means_at_least_threshold_samples():
    assert Average(n=10, avg=1.0).above(10) is True
    assert Average(n=9, avg=1.0).above(10) is False


@given(uncapped)
def test_average_var_straight_phase_gives_population_variance(samples):
    avg = feed(AverageVar(), samples)
    assert math.isclose(avg.avg, statistics.fmean(samples), rel_tol=1e-12)
    assert math.isclose(avg.var, statistics.pvariance(samples), rel_tol=1e-9, abs_tol=1e-12)


def test_average_var_exponential_phase_smooths_variance():
    avg = AverageVar(n=10, avg=4.0, var=1.0, q=10.0)
    new, _ = avg.update(6.0, HOST_AVERAGE)
    assert new.avg == 4.0 + 0.01 * 2.0
    assert new.var == (1 - 0.01) * (1.0 + 0.01 * 4.0)
    assert new.q == 10.0


def test_average_var_rejects_negative_samples():
    avg = AverageVar(n=2, avg=1.0, var=0.5, q=1.0)
    new, truncated = avg.update(-3.0, HOST_AVERAGE)
    assert new is avg
    assert truncated is True


def test_average_var_caps_like_average():
    new, truncated = AverageVar(n=1, avg=2.0).update(1000.0, HOST_AVERAGE)
    assert truncated is True
    assert new.avg == 11.0
