"""Peak FLOPS of a job at dispatch, its PFC, the default PFC and the sanity check."""

from __future__ import annotations

import math

import pytest

from apps.core.domain.resources import ProcType
from apps.credit.domain import ResourceUsage, default_pfc, fails_sanity_check, peak_flop_count, peak_flops


def test_cpu_job_peak_is_avg_ncpus_times_p_fpops():
    assert peak_flops(ResourceUsage(avg_ncpus=4.0), p_fpops=3e9) == 12e9


def test_gpu_job_peak_adds_gpu_count_times_gpu_peak():
    usage = ResourceUsage(avg_ncpus=0.5, gpu_type=ProcType.NVIDIA, gpu_usage=2.0)
    assert peak_flops(usage, p_fpops=4e9, gpu_peak_flops=1e12) == 0.5 * 4e9 + 2e12


def test_fractional_gpu_usage_counts_a_fraction_of_the_gpu():
    usage = ResourceUsage(avg_ncpus=0.0, gpu_type=ProcType.ATI, gpu_usage=0.5)
    assert peak_flops(usage, p_fpops=4e9, gpu_peak_flops=1e12) == 5e11


def test_cpu_job_ignores_the_hosts_gpu():
    assert peak_flops(ResourceUsage(avg_ncpus=1.0), p_fpops=3e9, gpu_peak_flops=1e12) == 3e9


@pytest.mark.parametrize("p_fpops", [-1e9, math.nan, math.inf])
def test_bad_benchmark_contributes_nothing(p_fpops):
    assert peak_flops(ResourceUsage(avg_ncpus=1.0), p_fpops=p_fpops) == 0.0


def test_pfc_is_elapsed_time_times_peak_flops():
    assert peak_flop_count(250.0, 4e9) == 1e12


def test_default_pfc_with_min_avg_pfc():
    assert default_pfc(1e12, 2.5) == 2.5e12


def test_default_pfc_without_min_avg_pfc_is_fpops_est():
    assert default_pfc(1e12, 0.0) == 1e12


def test_pfc_over_bound_fails_sanity_check():
    assert fails_sanity_check(2e15, 1e15) is True


def test_pfc_at_bound_passes_sanity_check():
    assert fails_sanity_check(1e15, 1e15) is False


@pytest.mark.parametrize("pfc", [-1.0, math.nan, math.inf])
def test_negative_or_non_finite_pfc_fails_sanity_check(pfc):
    assert fails_sanity_check(pfc, 1e15) is True
