"""Properties of effective_ncpus, BOINC's count of the CPUs a host's job limits use.

It is the reported count times the volunteer's max_ncpus_pct (rounded down), bounded by
the project's max_ncpus and MAX_CPUS, and at least 1.
"""

from hypothesis import given
from hypothesis import strategies as st

from apps.scheduler.domain.policy import MAX_CPUS, effective_ncpus

reported = st.integers(min_value=0, max_value=1_000_000)
caps = st.integers(min_value=0, max_value=100_000)
percentages = st.floats(min_value=0.0, max_value=100.0, exclude_min=True)
any_percentage = st.one_of(st.just(0.0), percentages, st.floats(allow_nan=True, allow_infinity=True))


@given(reported, any_percentage, caps)
def test_at_least_one_cpu(p_ncpus, pct, cap):
    assert effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=pct, max_ncpus=cap) >= 1


@given(reported, any_percentage, caps)
def test_never_more_than_the_host_reports(p_ncpus, pct, cap):
    assert effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=pct, max_ncpus=cap) <= max(p_ncpus, 1)


@given(reported, any_percentage, caps)
def test_never_more_than_the_project_cap_or_max_cpus(p_ncpus, pct, cap):
    n = effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=pct, max_ncpus=cap)
    assert n <= max(cap, 1)
    assert n <= MAX_CPUS


@given(reported, percentages, percentages, caps)
def test_a_higher_percentage_never_gives_fewer_cpus(p_ncpus, a, b, cap):
    low, high = sorted((a, b))
    assert effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=low, max_ncpus=cap) <= effective_ncpus(
        p_ncpus=p_ncpus, max_ncpus_pct=high, max_ncpus=cap
    )


@given(reported, caps)
def test_zero_percent_means_all_cpus(p_ncpus, cap):
    assert effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=0.0, max_ncpus=cap) == effective_ncpus(
        p_ncpus=p_ncpus, max_ncpus_pct=100.0, max_ncpus=cap
    )


@given(st.integers(min_value=1, max_value=MAX_CPUS), percentages)
def test_the_share_is_rounded_down(p_ncpus, pct):
    share = p_ncpus * pct / 100.0
    n = effective_ncpus(p_ncpus=p_ncpus, max_ncpus_pct=pct, max_ncpus=MAX_CPUS)
    assert n <= max(share, 1) < n + 1


def test_a_quarter_of_16_cpus_is_4():
    assert effective_ncpus(p_ncpus=16, max_ncpus_pct=25.0, max_ncpus=64) == 4


def test_the_share_is_taken_of_the_reported_cpus_before_the_project_cap():
    # As BOINC's get_job_limits: 50 % of 100 CPUs is 50, under a cap of 64 (not 50 % of 64).
    assert effective_ncpus(p_ncpus=100, max_ncpus_pct=50.0, max_ncpus=64) == 50


def test_a_share_below_one_cpu_still_counts_one():
    assert effective_ncpus(p_ncpus=2, max_ncpus_pct=10.0, max_ncpus=64) == 1
