"""Cross-version normalization, the feeder's pass (the design's and BOINC's update_av_scales)."""

from __future__ import annotations

from apps.core.domain.average import Average
from apps.credit.domain import (
    CreditPolicy,
    PlanClassScale,
    Rule,
    VersionNormalization,
    VersionPfc,
    VersionScale,
    normalize_app_versions,
    sample_median,
    version_pfc_median,
)

BOINC = CreditPolicy(normalization_rule=Rule.BOINC)


def cpu(id_, avg, n=100.0):
    return VersionPfc(app_version_id=id_, is_gpu=False, pfc=Average(n=n, avg=avg))


def gpu(id_, avg, n=100.0, plan_class="cuda"):
    return VersionPfc(app_version_id=id_, is_gpu=True, pfc=Average(n=n, avg=avg), plan_class=plan_class)


def test_two_cpu_versions_scale_to_their_sample_weighted_average():
    result = normalize_app_versions([cpu(1, 2.0, n=300), cpu(2, 6.0, n=100)])
    assert result == VersionNormalization(
        min_avg_pfc=3.0, scales=(VersionScale(1, 1.5), VersionScale(2, 0.5))
    )


def test_two_gpu_versions_scale_to_their_sample_weighted_average():
    result = normalize_app_versions([gpu(1, 10.0), gpu(2, 30.0)])
    assert result.min_avg_pfc == 20.0


def test_cpu_and_gpu_versions_scale_to_the_lower_average():
    result = normalize_app_versions([cpu(1, 2.0), gpu(2, 20.0)])
    assert result == VersionNormalization(
        min_avg_pfc=2.0, scales=(VersionScale(1, 1.0), VersionScale(2, 0.1))
    )


def test_single_version_above_threshold_sets_min_avg_pfc_with_scale_1():
    result = normalize_app_versions([cpu(1, 2.5), cpu(2, 9.0, n=99)])
    assert result == VersionNormalization(min_avg_pfc=2.5, scales=(VersionScale(1, 1.0),))


def test_no_version_above_threshold_changes_nothing():
    result = normalize_app_versions([cpu(1, 2.5, n=99), gpu(2, 9.0, n=10)])
    assert result == VersionNormalization(min_avg_pfc=None, scales=())


def test_versions_below_threshold_are_neither_counted_nor_scaled():
    result = normalize_app_versions([cpu(1, 2.0), cpu(2, 4.0), gpu(3, 50.0, n=99)])
    assert result.scales == (VersionScale(1, 1.5), VersionScale(2, 0.75))


def test_anonymous_platform_records_are_excluded():
    result = normalize_app_versions([cpu(1, 2.0), cpu(-2, 4.0)])
    assert result == VersionNormalization(min_avg_pfc=2.0, scales=(VersionScale(1, 1.0),))


def test_boinc_rule_never_scales_a_single_cpu_version():
    assert normalize_app_versions([cpu(1, 2.5)], policy=BOINC) == VersionNormalization(None, ())


def test_boinc_rule_scales_gpu_only_apps_to_a_tenth_of_the_gpu_average():
    result = normalize_app_versions([gpu(1, 20.0)], policy=BOINC)
    assert result == VersionNormalization(min_avg_pfc=2.0, scales=(VersionScale(1, 0.1),))


def test_boinc_rule_takes_the_lower_average_with_both_kinds():
    result = normalize_app_versions([cpu(1, 2.0), gpu(2, 20.0)], policy=BOINC)
    assert result.min_avg_pfc == 2.0


def test_gpu_only_app_uses_the_cross_project_factor_of_its_plan_class():
    table = [PlanClassScale(plan_class="cuda", scale=0.2, weight=1e6, n_versions=3)]
    result = normalize_app_versions([gpu(1, 20.0)], cross_project=table)
    assert result == VersionNormalization(min_avg_pfc=4.0, scales=(VersionScale(1, 0.2),))


def test_gpu_only_app_scales_factorless_versions_to_the_cross_project_reference():
    table = [PlanClassScale(plan_class="cuda", scale=0.2, weight=1e6, n_versions=3)]
    result = normalize_app_versions([gpu(1, 20.0), gpu(2, 8.0, plan_class="opencl_ati")], cross_project=table)
    assert result.scales == (VersionScale(1, 0.2), VersionScale(2, 0.5))


def test_cross_project_factor_applies_before_the_version_has_samples():
    table = [PlanClassScale(plan_class="cuda", scale=0.2, weight=1e6, n_versions=3)]
    result = normalize_app_versions([gpu(1, 20.0, n=5)], cross_project=table)
    assert result == VersionNormalization(min_avg_pfc=None, scales=(VersionScale(1, 0.2),))


def test_apps_with_a_cpu_version_ignore_the_cross_project_table():
    table = [PlanClassScale(plan_class="cuda", scale=0.2, weight=1e6, n_versions=3)]
    result = normalize_app_versions([cpu(1, 2.0), gpu(2, 20.0)], cross_project=table)
    assert result.scales == (VersionScale(1, 1.0), VersionScale(2, 0.1))


def test_gpu_only_app_without_a_matching_plan_class_uses_the_in_app_rule():
    table = [PlanClassScale(plan_class="opencl_ati", scale=0.2, weight=1e6, n_versions=3)]
    result = normalize_app_versions([gpu(1, 20.0)], cross_project=table)
    assert result == VersionNormalization(min_avg_pfc=20.0, scales=(VersionScale(1, 1.0),))


# --- the median of host averages (the design's remedy for cheating hosts) -----------------------


def test_sample_median_weights_each_host_average_by_its_samples():
    assert sample_median([Average(n=1, avg=9.0), Average(n=10, avg=2.0), Average(n=5, avg=3.0)]) == 2.0


def test_sample_median_of_an_even_split_is_the_midpoint_or_with_lower_the_lower_value():
    even = [Average(n=10, avg=a) for a in (4.0, 5.0, 7.0, 8.0)]
    assert (sample_median(even), sample_median(even, lower=True)) == (6.0, 5.0)


def test_sample_median_ignores_empty_and_broken_averages():
    assert sample_median([Average(), Average(n=3, avg=float("nan"))]) is None


HONEST = [Average(n=30, avg=a) for a in (5.9, 6.7, 8.3, 9.2)]  # four hosts, efficiencies 0.3-0.7


def test_one_inflated_host_among_four_leaves_the_version_median_as_without_it():
    assert version_pfc_median([*HONEST, Average(n=30, avg=750.0)]) == version_pfc_median(HONEST) == 7.5


def test_without_the_fence_one_inflated_host_among_four_moves_the_median_a_rank():
    no_fence = CreditPolicy(version_median_fence=0)
    assert version_pfc_median([*HONEST, Average(n=30, avg=750.0)], policy=no_fence) == 8.3


def test_a_host_with_many_samples_counts_as_one_settled_host():
    busy = Average(n=10_000, avg=9.0)
    assert version_pfc_median([Average(n=10, avg=a) for a in (5.0, 6.0, 7.0)] + [busy]) == 6.5


def test_a_host_with_few_samples_counts_for_less():
    assert version_pfc_median([Average(n=10, avg=5.0), Average(n=10, avg=7.0), Average(n=1, avg=9.0)]) == 7.0


def test_of_one_honest_host_and_one_inflated_host_the_honest_one_is_the_median():
    assert version_pfc_median([Average(n=10, avg=6.0), Average(n=10, avg=600.0)]) == 6.0


def test_a_host_far_below_the_others_is_left_out_too():
    assert version_pfc_median([*HONEST, Average(n=30, avg=0.05)]) == 7.5


def test_version_median_of_no_usable_host_is_none():
    assert version_pfc_median([Average(), Average(n=5, avg=float("inf"))]) is None
