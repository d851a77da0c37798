"""Properties of the credit math over arbitrary inputs (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from apps.core.domain.average import Average, AverageVar
from apps.credit.domain import (
    ET_RATIO_LIMIT,
    AppVersionStats,
    ClaimValue,
    CreditPolicy,
    HostAppVersionStats,
    Rule,
    ValidatedJob,
    VersionPfc,
    claimed_pfc,
    decay_rac,
    estimate_flops,
    granted_credit,
    host_scale_factor,
    normalize_app_versions,
    probation_on_failure,
    update_rac,
    version_pfc_median,
)

finite = st.floats(allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-300, max_value=1e300)
non_negative = st.floats(min_value=0.0, max_value=1e300)
averages = st.builds(Average, n=st.floats(min_value=0, max_value=1e6), avg=non_negative)
policies = st.builds(
    CreditPolicy,
    host_scale_check=st.booleans(),
    probation_rule=st.sampled_from(Rule),
    grant_rule=st.sampled_from(Rule),
    normalization_rule=st.sampled_from(Rule),
    runtime_outlier_check=st.booleans(),
    max_granted_credit=st.sampled_from([0.0, 7.3e7]),
)
jobs = st.builds(
    ValidatedJob,
    app_version_id=st.sampled_from([0, 5, -2, -3]),
    fpops_est=finite,
    fpops_bound=finite,
    elapsed_time=finite,
    peak_flops=finite,
    sent_time=finite,
    received_time=finite,
)
havs = st.builds(
    HostAppVersionStats,
    pfc=averages,
    scale_probation=st.booleans(),
    host_scale_time=finite,
    consecutive_valid=st.integers(min_value=0, max_value=20),
)


@given(
    jobs,
    havs,
    st.builds(AppVersionStats, pfc=averages, pfc_scale=non_negative),
    non_negative,
    finite,
    policies,
)
def test_claimed_pfc_is_finite_and_non_negative_for_any_finite_inputs(job, hav, av, min_avg_pfc, now, policy):
    claim = claimed_pfc(job, hav=hav, app_version=av, min_avg_pfc=min_avg_pfc, now=now, policy=policy)
    assert math.isfinite(claim.claimed_credit)
    assert claim.claimed_credit >= 0


@given(
    st.lists(
        st.builds(ClaimValue, pfc=st.floats(min_value=0.0, max_value=1.7e308), approx=st.booleans()),
        min_size=1,
    ),
    finite,
    finite,
    non_negative,
    policies,
)
def test_granted_credit_is_finite_and_non_negative(claims, fpops_est, fpops_bound, min_avg_pfc, policy):
    grant = granted_credit(
        claims, fpops_est=fpops_est, fpops_bound=fpops_bound, min_avg_pfc=min_avg_pfc, policy=policy
    )
    assert math.isfinite(grant.credit)
    assert grant.credit >= 0


@given(st.lists(st.builds(ClaimValue, pfc=non_negative, approx=st.just(False)), min_size=2), positive)
def test_seed_grant_lies_between_the_exact_claims(claims, fpops_est):
    grant = granted_credit(claims, fpops_est=fpops_est, fpops_bound=math.inf, min_avg_pfc=0.0)
    pfcs = [c.pfc for c in claims]
    assert min(pfcs) * (1 - 1e-12) - 1e-300 <= grant.pfc <= max(pfcs) * (1 + 1e-12) + 1e-300


@given(averages, averages)
def test_host_scale_never_exceeds_10(av_pfc, hav_pfc):
    assert 0 <= host_scale_factor(av_pfc, hav_pfc) <= 10


@given(averages, non_negative, finite)
def test_after_a_failure_under_probation_host_scale_is_at_most_1(hav_pfc, reference, now):
    hav = HostAppVersionStats(pfc=hav_pfc)
    after = probation_on_failure(
        hav,
        reference_pfc_avg=reference,
        delay_bound=86400,
        now=now,
        policy=CreditPolicy(host_scale_check=True),
    )
    assert host_scale_factor(Average(n=1e6, avg=reference), after.pfc) <= 1


versions = st.lists(
    st.builds(
        VersionPfc,
        app_version_id=st.integers(min_value=1, max_value=10**6),
        is_gpu=st.booleans(),
        pfc=st.builds(
            Average, n=st.floats(min_value=100, max_value=1e6), avg=st.floats(min_value=1e-3, max_value=1e3)
        ),
    ),
    min_size=1,
    max_size=6,
    unique_by=lambda v: v.app_version_id,
)


@given(versions)
def test_normalization_brings_every_version_to_min_avg_pfc(vs):
    result = normalize_app_versions(vs)
    by_id = {v.app_version_id: v for v in vs}
    for s in result.scales:
        assert math.isclose(s.pfc_scale * by_id[s.app_version_id].pfc.avg, result.min_avg_pfc, rel_tol=1e-12)


@given(versions)
def test_normalization_leaves_a_lone_reference_version_at_scale_1(vs):
    cpu = [v for v in vs if not v.is_gpu]
    gpu = [v for v in vs if v.is_gpu]
    result = normalize_app_versions(vs)
    scales = {s.app_version_id: s.pfc_scale for s in result.scales}
    for group in (cpu, gpu):
        if len(group) == 1 and group[0].pfc.avg == result.min_avg_pfc:
            assert scales[group[0].app_version_id] == 1.0


@given(versions)
def test_normalization_never_raises_credit_of_the_more_efficient_kind(vs):
    # X is the min of the CPU and GPU averages: the lower (more efficient) side's average
    # scale is at most 1, weighted by samples.
    result = normalize_app_versions(vs)
    if result.min_avg_pfc is None:
        return
    assert any(s.pfc_scale <= 1 + 1e-12 for s in result.scales)


@given(
    st.lists(st.floats(min_value=1.0, max_value=4.0), min_size=1, max_size=30),
    st.floats(min_value=10.0, max_value=1e6),
    st.floats(min_value=1, max_value=1e6),
)
def test_one_host_inflated_past_the_fence_leaves_the_version_median_as_it_was(honest, inflate, n):
    # Honest hosts within a factor 4 of each other; the cheater's average is over 10 x the largest.
    settled = [Average(n=10, avg=a) for a in honest]
    cheater = Average(n=n, avg=max(honest) * 10 * inflate / 9.9)
    assert version_pfc_median([*settled, cheater]) == version_pfc_median(settled)


@given(st.lists(st.builds(Average, n=st.floats(min_value=0, max_value=1e6), avg=finite), max_size=20))
@example([Average(n=1.0, avg=8.988465674311579e307), Average(n=1.0, avg=8.98846567431158e307)])
@example([Average(n=1.0, avg=5e-324), Average(n=1.0, avg=5e-324)])
def test_the_version_median_lies_among_the_host_averages(hosts):
    median = version_pfc_median(hosts)
    usable = [a.avg for a in hosts if a.n > 0 and a.avg >= 0]
    assert median is None if not usable else min(usable) <= median <= max(usable)


@given(
    st.floats(min_value=0, max_value=1e12),
    st.floats(min_value=1.0, max_value=2e9),
    st.floats(min_value=0, max_value=1e9),
    st.floats(min_value=0, max_value=1e8),
)
def test_rac_stays_non_negative_and_decay_never_raises_it(avg, avg_time, work, dt):
    new, _ = update_rac(avg, avg_time, work, avg_time + dt)
    decayed, _ = decay_rac(avg, avg_time, avg_time + dt)
    assert new >= 0
    assert decayed <= avg


@given(
    st.floats(min_value=1e3, max_value=1e15),
    st.builds(AverageVar, n=st.floats(min_value=0, max_value=1e4), avg=non_negative),
    averages,
)
def test_flops_estimate_never_exceeds_the_ratio_limit(peak, et, av_pfc):
    assert estimate_flops(peak_flops=peak, hav_et=et, av_pfc=av_pfc).flops <= ET_RATIO_LIMIT * peak
