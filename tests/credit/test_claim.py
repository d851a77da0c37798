"""claimed_pfc: each rule of CreditNew's claimed-credit algorithm, one test each."""

from __future__ import annotations

from apps.core.domain.average import Average, AverageVar
from apps.credit.domain import (
    ERROR_RATE_INIT,
    SEED_POLICY,
    ClaimBranch,
    CreditPolicy,
    HostAppVersionStats,
    Rule,
    claimed_credit,
    claimed_pfc,
    probation_on_send,
    probation_on_valid,
)
from tests.credit.builders import (
    ELAPSED,
    FPOPS_BOUND,
    FPOPS_EST,
    NOW,
    PFC,
    SETTLED_HOST,
    SETTLED_VERSION,
    anonymous_job,
    app_version,
    hav,
    job,
)

PROBATION = CreditPolicy(host_scale_check=True)


def claim(j=None, *, h=None, av="default", min_avg_pfc=0.0, now=NOW, policy=SEED_POLICY):
    return claimed_pfc(
        j or job(),
        hav=h or hav(),
        app_version=app_version() if av == "default" else av,
        min_avg_pfc=min_avg_pfc,
        now=now,
        policy=policy,
    )


# --- no app version info ---------------------------------------------------------------


def test_no_app_version_info_claims_fpops_est():
    c = claim(job(app_version_id=0), min_avg_pfc=3.0)
    assert (c.pfc, c.approx, c.branch) == (FPOPS_EST, True, ClaimBranch.NO_VERSION_INFO)


def test_no_app_version_info_updates_no_statistics():
    h = hav()
    c = claim(job(app_version_id=0), h=h)
    assert c.host_app_version == h
    assert c.app_version_pfc is None
    assert c.av_pfc_sample is None


def test_missing_app_version_row_counts_as_no_version_info():
    c = claim(job(), av=None)
    assert (c.pfc, c.branch) == (FPOPS_EST, ClaimBranch.NO_VERSION_INFO)


# --- sanity check ------------------------------------------------------------------------


def test_pfc_over_bound_claims_min_avg_pfc_times_fpops_est():
    c = claim(job(elapsed_time=1e6), min_avg_pfc=3.0)
    assert (c.pfc, c.approx, c.branch) == (3.0 * FPOPS_EST, True, ClaimBranch.OVER_BOUND)


def test_pfc_over_bound_without_min_avg_pfc_claims_fpops_est():
    c = claim(job(elapsed_time=1e6))
    assert c.pfc == FPOPS_EST


def test_pfc_equal_to_bound_passes_the_sanity_check():
    c = claim(job(elapsed_time=FPOPS_BOUND / 2e10))
    assert c.branch is ClaimBranch.NORMAL


def test_absurd_pfc_of_1e304_gets_the_default():
    c = claim(job(peak_flops=1e302), min_avg_pfc=3.0)
    assert c.pfc == 3.0 * FPOPS_EST


def test_pfc_over_bound_puts_host_on_probation_and_resets_error_rate():
    c = claim(job(elapsed_time=1e6), h=hav(error_rate=0.0))
    assert c.host_app_version.scale_probation is True
    assert c.host_app_version.error_rate == ERROR_RATE_INIT


def test_pfc_over_bound_clears_an_expired_probation_clock_so_the_next_send_starts_one():
    c = claim(job(elapsed_time=1e6), h=hav(scale_probation=False, host_scale_time=NOW - 100.0))
    assert (c.host_app_version.scale_probation, c.host_app_version.host_scale_time) == (True, 0.0)
    sent = probation_on_send(c.host_app_version, delay_bound=86400.0, now=NOW + 10.0, policy=PROBATION)
    assert sent.host_scale_time == NOW + 10.0 + 86400.0
    assert probation_on_valid(sent, now=NOW + 3600.0).scale_probation is True


def test_pfc_over_bound_keeps_a_running_probation_clock():
    c = claim(job(elapsed_time=1e6), h=hav(scale_probation=True, host_scale_time=NOW + 500.0))
    assert c.host_app_version.host_scale_time == NOW + 500.0


def test_pfc_over_bound_updates_no_statistics():
    h = hav()
    c = claim(job(elapsed_time=1e6), h=h)
    assert (c.host_app_version.pfc, c.host_app_version.et) == (h.pfc, h.et)
    assert c.app_version_pfc is None


def test_negative_elapsed_time_fails_the_sanity_check():
    c = claim(job(elapsed_time=-5.0))
    assert c.branch is ClaimBranch.OVER_BOUND


# --- anonymous platform ------------------------------------------------------------------


def test_anonymous_with_min_avg_pfc_and_settled_host_normalizes_to_min_avg_pfc():
    c = claim(anonymous_job(), av=None, min_avg_pfc=3.0)
    assert c.pfc == PFC * 3.0 / 4.0
    assert c.approx is False
    assert c.branch is ClaimBranch.ANONYMOUS


def test_anonymous_host_factor_is_capped_at_10():
    c = claim(anonymous_job(), h=hav(pfc=Average(n=20, avg=0.01)), av=None, min_avg_pfc=1.0)
    assert c.pfc == PFC * 10.0


def test_anonymous_with_min_avg_pfc_and_unsettled_host_claims_min_avg_pfc_times_fpops_est():
    c = claim(anonymous_job(), h=hav(pfc=Average(n=9, avg=4.0)), av=None, min_avg_pfc=3.0)
    assert (c.pfc, c.approx) == (3.0 * FPOPS_EST, True)


def test_anonymous_on_probation_claims_min_avg_pfc_times_fpops_est():
    c = claim(anonymous_job(), h=hav(scale_probation=True), av=None, min_avg_pfc=3.0)
    assert (c.pfc, c.approx) == (3.0 * FPOPS_EST, True)


def test_anonymous_without_min_avg_pfc_claims_fpops_est():
    c = claim(anonymous_job(), av=None)
    assert (c.pfc, c.approx) == (FPOPS_EST, True)


def test_anonymous_updates_host_statistics_only():
    c = claim(anonymous_job(), av=None, min_avg_pfc=3.0)
    assert c.host_app_version.pfc == Average(n=51, avg=4.0 + 0.01 * (2.0 - 4.0))
    assert c.app_version_pfc is None
    assert c.av_pfc_sample is None


# --- normal case: version and host normalization ----------------------------------------


def test_both_scales_apply_and_claim_is_exact():
    c = claim()
    assert c.pfc == PFC * 0.5 * (6.0 / 4.0)
    assert c.approx is False


def test_version_scale_without_host_scale_is_approximate():
    c = claim(h=hav(pfc=Average(n=9, avg=4.0)))
    assert (c.pfc, c.approx) == (PFC * 0.5, True)


def test_host_scale_without_version_scale_is_approximate():
    c = claim(av=app_version(pfc_scale=0.0))
    assert (c.pfc, c.approx) == (PFC * 1.5, True)


def test_neither_scale_claims_raw_pfc():
    c = claim(h=hav(pfc=Average(n=3, avg=4.0)), av=app_version(pfc_scale=0.0))
    assert (c.pfc, c.approx) == (PFC, True)


def test_claim_without_host_scale_is_capped_at_claim_cap_times_the_versions_typical_job():
    # Version: pfc average 6.0 per fpops_est, pfc_scale 0.5 -> a typical job claims 3.0 x FPOPS_EST.
    inflated = job(elapsed_time=100 * ELAPSED)  # PFC 200 per fpops_est, within the bound
    c = claim(inflated, h=hav(pfc=Average(n=3, avg=4.0)), policy=CreditPolicy(claim_cap=10))
    assert (c.pfc, c.approx) == (10 * 3.0 * FPOPS_EST, True)


def test_claim_cap_leaves_host_normalized_claims_alone():
    inflated = job(elapsed_time=100 * ELAPSED)
    c = claim(inflated, policy=CreditPolicy(claim_cap=10))
    assert c.pfc == 100 * PFC * 0.5 * (6.0 / 4.0)


def test_without_a_claim_cap_an_unnormalized_claim_counts_in_full():
    inflated = job(elapsed_time=100 * ELAPSED)
    c = claim(inflated, h=hav(pfc=Average(n=3, avg=4.0)))
    assert c.pfc == 100 * PFC * 0.5


def test_host_scale_cap_is_the_policys():
    c = claim(
        h=hav(pfc=Average(n=50, avg=0.1)),
        av=app_version(pfc_scale=1.0),
        policy=CreditPolicy(host_scale_max=3),
    )
    assert c.pfc == PFC * 3


def test_host_scale_over_10_is_capped_at_10():
    c = claim(h=hav(pfc=Average(n=50, avg=0.1)), av=app_version(pfc_scale=1.0))
    assert c.pfc == PFC * 10


def test_no_host_scale_while_version_average_is_below_threshold():
    c = claim(av=app_version(pfc=Average(n=99, avg=6.0)))
    assert (c.pfc, c.approx) == (PFC * 0.5, True)


def test_no_host_scale_when_host_average_is_zero():
    c = claim(h=hav(pfc=Average(n=50, avg=0.0)))
    assert (c.pfc, c.approx) == (PFC * 0.5, True)


def test_no_host_scale_on_scale_probation():
    c = claim(h=hav(scale_probation=True))
    assert (c.pfc, c.approx) == (PFC * 0.5, True)


def test_no_host_scale_before_host_scale_time():
    c = claim(h=hav(host_scale_time=NOW + 1))
    assert (c.pfc, c.approx) == (PFC * 0.5, True)


def test_host_scale_uses_averages_before_this_jobs_sample():
    c = claim(h=hav(pfc=Average(n=50, avg=4.0)))
    assert c.pfc == PFC * 0.5 * 1.5  # 6.0 / 4.0, not 6.0 / 3.98


def test_boinc_probation_needs_ten_consecutive_valid_results():
    policy = CreditPolicy(host_scale_check=True, probation_rule=Rule.BOINC)
    c = claim(h=hav(consecutive_valid=9), policy=policy)
    assert (c.pfc, c.approx) == (PFC * 0.5, True)


def test_boinc_probation_allows_host_scale_after_ten_consecutive_valid_results():
    policy = CreditPolicy(host_scale_check=True, probation_rule=Rule.BOINC)
    c = claim(h=hav(consecutive_valid=10), policy=policy)
    assert c.approx is False


# --- statistics ------------------------------------------------------------------------


def test_normal_claim_adds_pfc_per_fpops_est_to_host_average():
    c = claim()
    assert c.host_app_version.pfc == Average(n=51, avg=4.0 + 0.01 * (2.0 - 4.0))


def test_normal_claim_adds_pfc_per_fpops_est_to_version_average():
    c = claim()
    assert c.av_pfc_sample == 2.0
    assert c.app_version_pfc == Average(n=501, avg=6.0 + 0.001 * (2.0 - 6.0))


def test_with_the_median_a_settled_versions_average_only_counts_the_sample():
    # The feeder's median of host averages is the version's average until its next pass.
    c = claim(job(elapsed_time=100 * ELAPSED), policy=CreditPolicy(version_median=True))
    assert c.app_version_pfc == Average(n=501, avg=6.0)


def test_with_the_median_an_unsettled_versions_average_takes_the_sample():
    c = claim(av=app_version(pfc=Average(n=3, avg=6.0)), policy=CreditPolicy(version_median=True))
    assert c.app_version_pfc == Average(n=4, avg=6.0 + (2.0 - 6.0) / 4)


def test_normal_claim_adds_elapsed_per_fpops_est_to_et():
    c = claim()
    assert c.host_app_version.et == AverageVar(n=1, avg=100.0 / FPOPS_EST, var=0.0, q=0.0)


def test_normal_claim_adds_turnaround():
    c = claim()
    assert c.host_app_version.turnaround.avg == 3000.0


def test_claim_leaves_probation_and_error_rate_alone():
    h = hav(error_rate=0.3)
    c = claim(h=h)
    assert (c.host_app_version.scale_probation, c.host_app_version.error_rate) == (False, 0.3)


def test_fresh_host_app_version_is_on_probation():
    assert HostAppVersionStats().scale_probation is True


# --- claimed credit and runtime outliers -----------------------------------------------


def test_claimed_credit_is_200_per_gflops_day():
    assert claimed_credit(86400e9) == 200.0


def test_claim_exposes_its_credit():
    c = claim(av=app_version(pfc_scale=0.0), h=hav(pfc=Average()))
    assert c.claimed_credit == PFC * 200 / 86400e9


def test_runtime_outlier_check_substitutes_average_cpu_flops_for_failed_benchmark():
    policy = CreditPolicy(runtime_outlier_check=True)
    c = claim(job(peak_flops=1e9), av=app_version(pfc_scale=0.0), h=hav(pfc=Average()), policy=policy)
    assert c.pfc == 100.0 * 4.3e9
    assert c.runtime_outlier is True


def test_runtime_outlier_is_kept_out_of_statistics():
    policy = CreditPolicy(runtime_outlier_check=True)
    h = hav()
    c = claim(job(peak_flops=0.0), h=h, policy=policy)
    assert c.host_app_version == h
    assert (c.app_version_pfc, c.av_pfc_sample) == (None, None)


def test_without_outlier_check_a_1e9_peak_is_used_as_is():
    c = claim(job(peak_flops=1e9), av=app_version(pfc_scale=0.0), h=hav(pfc=Average()))
    assert (c.pfc, c.runtime_outlier) == (100.0 * 1e9, False)


def test_corrupt_pfc_scale_falls_back_to_default():
    c = claim(av=app_version(pfc_scale=1e300), h=hav(pfc=Average(n=50, avg=1e-300)), min_avg_pfc=3.0)
    assert c.pfc == 3.0 * FPOPS_EST


def test_settled_fixture_values():
    # Guards the numbers the expectations above are written against.
    assert (SETTLED_HOST.avg, SETTLED_VERSION.avg, PFC / FPOPS_EST) == (4.0, 6.0, 2.0)
