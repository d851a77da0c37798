"""Trust, reliability and the reduced deadline (pure rules)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from apps.scheduler.domain.replication import (
    HostVersionRecord,
    ReliableConfig,
    needs_reliable,
    reliable,
    reliable_delay_bound,
    replicate_on_send,
    trusted,
    turnaround_factor,
)
from apps.work.domain.batch_tails import batch_tail


@given(st.integers(min_value=0, max_value=9), st.floats(min_value=0, max_value=0.999999))
def test_fewer_than_ten_consecutive_valid_is_never_trusted(cv: int, draw: float) -> None:
    assert not trusted(cv, draw)


@given(st.integers(min_value=10, max_value=10_000), st.floats(min_value=0, max_value=0.999999))
def test_trusted_exactly_when_the_draw_is_past_one_over_consecutive_valid(cv: int, draw: float) -> None:
    assert trusted(cv, draw) is (draw >= 1 / cv)


def test_trusted_fraction_is_one_minus_one_over_consecutive_valid() -> None:
    rng = random.Random(3)
    n = 100_000
    share = sum(trusted(20, rng.random()) for _ in range(n)) / n
    assert abs(share - (1 - 1 / 20)) < 0.005


def test_replication_raised_only_for_an_untrusted_send_of_a_single_result_workunit() -> None:
    assert replicate_on_send(adaptive=True, app_target_nresults=2, wu_target_nresults=1, trusted=False)
    assert not replicate_on_send(adaptive=True, app_target_nresults=2, wu_target_nresults=1, trusted=True)
    assert not replicate_on_send(adaptive=True, app_target_nresults=2, wu_target_nresults=2, trusted=False)
    assert not replicate_on_send(adaptive=False, app_target_nresults=2, wu_target_nresults=1, trusted=False)
    assert not replicate_on_send(adaptive=True, app_target_nresults=1, wu_target_nresults=1, trusted=False)


GOOD = HostVersionRecord(consecutive_valid=12, turnaround_n=50, turnaround_avg=3600, error_rate=0.001)


def test_a_host_version_with_a_long_record_is_reliable_when_nothing_else_is_bounded() -> None:
    assert reliable(GOOD, ReliableConfig(), full_quota=200)


def test_fewer_than_ten_consecutive_valid_is_not_reliable() -> None:
    record = HostVersionRecord(consecutive_valid=9)
    assert not reliable(record, ReliableConfig(), full_quota=0)


def test_a_slow_turnaround_is_not_reliable_once_there_are_enough_samples() -> None:
    config = ReliableConfig(max_avg_turnaround=1800)
    assert not reliable(GOOD, config, full_quota=0)
    few = HostVersionRecord(consecutive_valid=12, turnaround_n=10, turnaround_avg=3600)
    assert reliable(few, config, full_quota=0)


def test_rarer_platforms_get_a_longer_turnaround_bound() -> None:
    config = ReliableConfig(max_avg_turnaround=2500)
    factor = turnaround_factor("FreeBSD", "AMD")
    assert factor == 1.8
    assert reliable(GOOD, config, full_quota=0, factor=factor)
    assert turnaround_factor("Linux Ubuntu", "AMD") == 1.0
    assert turnaround_factor("Darwin", "Apple M2") == 1.0
    assert turnaround_factor("Darwin", "Power Macintosh") == 1.8


def test_an_error_rate_above_the_bound_is_not_reliable() -> None:
    assert not reliable(GOOD, ReliableConfig(max_error_rate=0.0005), full_quota=0)
    assert reliable(GOOD, ReliableConfig(max_error_rate=0.01), full_quota=0)


def test_a_daily_quota_cut_by_failures_is_not_reliable() -> None:
    cut = HostVersionRecord(consecutive_valid=12, max_jobs_per_day=150)
    assert not reliable(cut, ReliableConfig(), full_quota=200)
    full = HostVersionRecord(consecutive_valid=12, max_jobs_per_day=200)
    assert reliable(full, ReliableConfig(), full_quota=200)


def test_results_need_a_reliable_host_from_reliable_on_priority_on() -> None:
    config = ReliableConfig(on_priority=5)
    assert needs_reliable(5, config)
    assert needs_reliable(9, config)
    assert not needs_reliable(4, config)
    assert not needs_reliable(100, ReliableConfig())


def test_the_reduced_deadline_is_the_fraction_of_the_delay_bound() -> None:
    config = ReliableConfig(reduced_delay_bound=0.5)
    assert reliable_delay_bound(86400, config, est_duration=3600) == 43200


def test_the_reduced_deadline_stretches_to_twice_a_long_estimate() -> None:
    config = ReliableConfig(reduced_delay_bound=0.5)
    assert reliable_delay_bound(86400, config, est_duration=30000) == 60000


def test_the_reduced_deadline_stays_when_twice_the_estimate_passes_the_full_bound() -> None:
    config = ReliableConfig(reduced_delay_bound=0.5)
    assert reliable_delay_bound(86400, config, est_duration=50000) == 43200


def test_no_reduced_deadline_without_the_setting() -> None:
    assert reliable_delay_bound(86400, ReliableConfig(), est_duration=10) == 86400


@given(
    st.floats(min_value=1, max_value=1e8),
    st.floats(min_value=0.02, max_value=0.99),
    st.floats(min_value=0, max_value=1e9),
)
def test_the_reduced_deadline_is_never_longer_than_the_delay_bound(
    bound: float, frac: float, est: float
) -> None:
    assert reliable_delay_bound(bound, ReliableConfig(reduced_delay_bound=frac), est) <= bound


def test_a_batch_is_in_its_tail_when_few_of_its_workunits_are_unfinished() -> None:
    assert batch_tail(unfinished=5, total=100, fraction=0.05)
    assert not batch_tail(unfinished=6, total=100, fraction=0.05)
    assert not batch_tail(unfinished=0, total=100, fraction=0.05)
    assert not batch_tail(unfinished=1, total=100, fraction=0)
