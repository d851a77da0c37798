"""Quantiles and histogram of granted credit (pure)."""

from __future__ import annotations

import math

from apps.credit.domain.distribution import Bin, credit_distribution, histogram, quantile


def test_quantiles_interpolate_between_ranks():
    ordered = [1.0, 2.0, 3.0, 4.0]
    assert quantile(ordered, 0.0) == 1.0
    assert quantile(ordered, 0.5) == 2.5
    assert quantile(ordered, 1.0) == 4.0


def test_histogram_counts_every_value_once_and_keeps_the_maximum_in_the_last_bin():
    bins = histogram([0.0, 1.0, 1.0, 9.9, 10.0], 10)
    assert len(bins) == 10
    assert sum(b.count for b in bins) == 5
    assert bins[1].count == 2
    assert bins[-1].count == 2


def test_equal_values_make_one_bin():
    assert histogram([5.0, 5.0], 20) == (Bin(5.0, 5.0, 2),)


def test_distribution_ignores_non_finite_and_negative_values():
    d = credit_distribution([10.0, math.nan, -1.0, 30.0, math.inf])
    assert d is not None
    assert (d.n, d.mean) == (2, 20.0)
    assert dict(d.quantiles)[0.5] == 20.0


def test_no_values_no_distribution():
    assert credit_distribution([]) is None
