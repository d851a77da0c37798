"""Host normalization factor and scale probation against cherry picking."""

from __future__ import annotations

from apps.core.domain.average import Average
from apps.credit.domain import (
    CreditPolicy,
    HostAppVersionStats,
    Rule,
    host_scale_factor,
    host_scaling_allowed,
    probation_on_failure,
    probation_on_send,
    probation_on_valid,
)
from tests.credit.builders import NOW, SETTLED_VERSION, hav

PROBATION = CreditPolicy(host_scale_check=True)
DAY = 86400.0


def test_host_scale_is_version_average_over_host_average():
    assert host_scale_factor(Average(n=100, avg=6.0), Average(n=10, avg=4.0)) == 1.5


def test_host_scale_is_capped_at_10():
    assert host_scale_factor(Average(n=100, avg=6.0), Average(n=10, avg=0.05)) == 10.0


def test_host_scale_needs_host_samples():
    assert host_scale_factor(Average(n=100, avg=6.0), Average(n=9, avg=4.0)) == 0.0


def test_host_scale_needs_version_samples():
    assert host_scale_factor(Average(n=99, avg=6.0), Average(n=10, avg=4.0)) == 0.0


def test_send_on_probation_sets_host_scale_time_to_now_plus_delay_bound():
    h = probation_on_send(HostAppVersionStats(), delay_bound=DAY, now=NOW, policy=PROBATION)
    assert h.host_scale_time == NOW + DAY


def test_later_sends_do_not_push_a_running_probation_clock():
    h = HostAppVersionStats(host_scale_time=NOW + DAY)
    assert probation_on_send(h, delay_bound=DAY, now=NOW + 3600, policy=PROBATION) == h


def test_sends_do_not_rearm_an_expired_clock():
    h = HostAppVersionStats(host_scale_time=NOW - 1)
    assert probation_on_send(h, delay_bound=DAY, now=NOW, policy=PROBATION) == h


def test_send_off_probation_leaves_host_scale_time():
    h = hav(host_scale_time=5.0)
    assert probation_on_send(h, delay_bound=DAY, now=NOW, policy=PROBATION).host_scale_time == 5.0


def test_send_with_probation_off_leaves_host_scale_time():
    h = probation_on_send(HostAppVersionStats(), delay_bound=DAY, now=NOW)
    assert h.host_scale_time == 0.0


def test_validation_after_host_scale_time_clears_probation():
    h = HostAppVersionStats(host_scale_time=NOW - 1)
    assert probation_on_valid(h, now=NOW).scale_probation is False


def test_validation_at_host_scale_time_keeps_probation():
    h = HostAppVersionStats(host_scale_time=NOW)
    assert probation_on_valid(h, now=NOW).scale_probation is True


def test_first_validation_clears_initial_probation_when_probation_is_off():
    assert probation_on_valid(HostAppVersionStats(), now=NOW).scale_probation is False


def test_validation_counts_consecutive_valid():
    assert probation_on_valid(hav(consecutive_valid=3), now=NOW).consecutive_valid == 4


def test_unreplicated_validation_does_not_count_consecutive_valid():
    assert probation_on_valid(hav(consecutive_valid=3), now=NOW, unreplicated=True).consecutive_valid == 3


def test_failure_puts_host_back_on_probation_until_now_plus_delay_bound():
    h = probation_on_failure(hav(), reference_pfc_avg=6.0, delay_bound=DAY, now=NOW, policy=PROBATION)
    assert (h.scale_probation, h.host_scale_time) == (True, NOW + DAY)


def test_failure_maxes_the_host_scale_factor_with_1():
    h = probation_on_failure(hav(), reference_pfc_avg=6.0, delay_bound=DAY, now=NOW, policy=PROBATION)
    assert h.pfc == Average(n=50, avg=6.0)
    assert host_scale_factor(SETTLED_VERSION, h.pfc) == 1.0


def test_failure_keeps_a_host_average_already_above_the_reference():
    h = probation_on_failure(
        hav(pfc=Average(n=50, avg=9.0)), reference_pfc_avg=6.0, delay_bound=DAY, now=NOW, policy=PROBATION
    )
    assert h.pfc.avg == 9.0


def test_failure_with_probation_off_only_resets_consecutive_valid():
    h = hav(consecutive_valid=7)
    after = probation_on_failure(h, reference_pfc_avg=6.0, delay_bound=DAY, now=NOW)
    assert after == HostAppVersionStats(pfc=h.pfc, scale_probation=False, consecutive_valid=0)


def test_host_scaling_not_allowed_on_probation():
    assert host_scaling_allowed(hav(scale_probation=True), now=NOW) is False


def test_host_scaling_not_allowed_before_host_scale_time():
    assert host_scaling_allowed(hav(host_scale_time=NOW + 1), now=NOW) is False


def test_host_scaling_allowed_from_host_scale_time_on():
    assert host_scaling_allowed(hav(host_scale_time=NOW), now=NOW) is True


def test_boinc_rule_without_host_scale_check_ignores_consecutive_valid():
    policy = CreditPolicy(probation_rule=Rule.BOINC)
    assert host_scaling_allowed(hav(consecutive_valid=0), now=NOW, policy=policy) is True


def test_busy_host_leaves_probation_after_one_clean_delay_bound():
    h = HostAppVersionStats()
    t = NOW
    for _ in range(30):  # a job sent and one validated every hour for 30 hours
        h = probation_on_send(h, delay_bound=DAY, now=t, policy=PROBATION)
        h = probation_on_valid(h, now=t + 1800)
        t += 3600
    assert h.scale_probation is False
