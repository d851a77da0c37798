"""Runtime estimation: projected FLOPS from the statistics, and the job duration."""

from __future__ import annotations

import math

from apps.core.domain.average import Average, AverageVar
from apps.credit.domain import FlopsEstimate, FlopsSource, estimate_flops, estimated_duration

PEAK = 1e10


def test_no_statistics_gives_the_peak():
    assert estimate_flops(peak_flops=PEAK, hav_et=AverageVar()) == FlopsEstimate(PEAK, FlopsSource.PEAK)


def test_settled_host_et_gives_its_inverse():
    # et averages elapsed/fpops_est: 2**-30 s per fpop means 2**30 FLOPS.
    est = estimate_flops(peak_flops=PEAK, hav_et=AverageVar(n=11, avg=2.0**-30))
    assert est == FlopsEstimate(2.0**30, FlopsSource.HOST_ET)


def test_unsettled_host_falls_back_to_the_version_pfc():
    # Above the threshold (the design; BOINC's et.n > 10): ten samples are not yet enough.
    est = estimate_flops(peak_flops=PEAK, hav_et=AverageVar(n=10, avg=1e-9), av_pfc=Average(n=101, avg=4.0))
    assert est == FlopsEstimate(PEAK / 4.0, FlopsSource.VERSION_PFC)


def test_unsettled_version_pfc_is_not_used():
    est = estimate_flops(peak_flops=PEAK, hav_et=AverageVar(), av_pfc=Average(n=100, avg=4.0))
    assert est.source is FlopsSource.PEAK


def test_anonymous_platform_without_host_statistics_gets_the_peak():
    est = estimate_flops(peak_flops=PEAK, hav_et=AverageVar(n=3, avg=1e-9), av_pfc=None)
    assert est.source is FlopsSource.PEAK


def test_host_pfc_option_gives_peak_over_host_pfc():
    est = estimate_flops(
        peak_flops=PEAK, hav_et=AverageVar(n=11, avg=1e-9), hav_pfc=Average(n=11, avg=5.0), from_hav_pfc=True
    )
    assert est == FlopsEstimate(PEAK / 5.0, FlopsSource.HOST_PFC)


def test_no_stats_option_forces_the_peak():
    est = estimate_flops(peak_flops=PEAK, hav_et=AverageVar(n=10, avg=1e-9), no_stats=True)
    assert est.source is FlopsSource.PEAK


def test_estimate_is_capped_at_250_times_the_peak():
    est = estimate_flops(peak_flops=PEAK, hav_et=AverageVar(n=11, avg=1e-15))
    assert est.flops == 250 * PEAK


def test_duration_is_fpops_est_over_flops_over_available_fraction():
    assert estimated_duration(fpops_est=1e12, projected_flops=1e9, available_frac=0.5) == 2000.0


def test_unusable_available_fraction_counts_as_one():
    assert estimated_duration(fpops_est=1e12, projected_flops=1e9, available_frac=0.0) == 1000.0


def test_duration_without_a_speed_is_infinite():
    assert estimated_duration(fpops_est=1e12, projected_flops=0.0, available_frac=1.0) == math.inf
