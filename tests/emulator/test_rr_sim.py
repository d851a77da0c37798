from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apps.core.domain.resources import ProcType
from apps.emulator.domain.rr_sim import RRJob, rr_simulate

CPU, GPU = ProcType.CPU, ProcType.NVIDIA


def _job(key: int, project: str, remaining: float, *, proc: ProcType = CPU, deadline: float = 1e9) -> RRJob:
    return RRJob(key=key, project=project, proc_type=proc, usage=1.0, remaining=remaining, deadline=deadline)


def test_empty_queue_is_all_shortfall() -> None:
    result = rr_simulate([], {CPU: 2.0}, {}, now=0.0, horizon=100.0)
    assert result.resources[CPU].shortfall == 200.0


def test_empty_queue_is_saturated_now() -> None:
    result = rr_simulate([], {CPU: 2.0}, {}, now=0.0, horizon=100.0)
    assert (result.resources[CPU].saturated_time, result.resources[CPU].nidle_now) == (0.0, 2.0)


def test_one_job_on_two_cpus_leaves_one_idle_now() -> None:
    result = rr_simulate([_job(1, "A", 50.0)], {CPU: 2.0}, {"A": 1}, now=0.0, horizon=100.0)
    assert result.resources[CPU].nidle_now == 1.0


def test_shortfall_counts_idle_instance_seconds_until_horizon() -> None:
    result = rr_simulate([_job(1, "A", 50.0)], {CPU: 2.0}, {"A": 1}, now=0.0, horizon=100.0)
    assert result.resources[CPU].shortfall == 150.0


def test_saturated_time_is_when_an_instance_first_idles() -> None:
    jobs = [_job(1, "A", 30.0), _job(2, "B", 80.0)]
    result = rr_simulate(jobs, {CPU: 2.0}, {"A": 1, "B": 1}, now=0.0, horizon=100.0)
    assert result.resources[CPU].saturated_time == 30.0


def test_weighted_round_robin_follows_resource_share() -> None:
    # One CPU, A has 3x B's share: A's 30 s job gets 75% and ends at 40 s.
    jobs = [_job(1, "A", 30.0, deadline=39.0), _job(2, "B", 100.0)]
    result = rr_simulate(jobs, {CPU: 1.0}, {"A": 300, "B": 100}, now=0.0, horizon=10.0)
    assert result.deadline_misses == frozenset({1})


def test_job_meeting_its_deadline_is_not_a_miss() -> None:
    jobs = [_job(1, "A", 30.0, deadline=40.0), _job(2, "B", 100.0)]
    result = rr_simulate(jobs, {CPU: 1.0}, {"A": 300, "B": 100}, now=0.0, horizon=10.0)
    assert result.deadline_misses == frozenset()


def test_deadlines_are_absolute() -> None:
    result = rr_simulate([_job(1, "A", 30.0, deadline=1020.0)], {CPU: 1.0}, {"A": 1}, now=1000.0, horizon=1.0)
    assert result.deadline_misses == frozenset({1})


def test_resources_are_simulated_separately() -> None:
    jobs = [_job(1, "A", 500.0, proc=GPU)]
    result = rr_simulate(jobs, {CPU: 1.0, GPU: 1.0}, {"A": 1}, now=0.0, horizon=100.0)
    assert (result.resources[CPU].shortfall, result.resources[GPU].shortfall) == (100.0, 0.0)


def test_unused_share_goes_to_other_projects() -> None:
    # A can use one of two CPUs; B's two jobs get the other one and the share A cannot use.
    jobs = [_job(1, "A", 100.0), _job(2, "B", 100.0), _job(3, "B", 100.0)]
    result = rr_simulate(jobs, {CPU: 2.0}, {"A": 100, "B": 1}, now=0.0, horizon=50.0)
    assert result.resources[CPU].shortfall == 0.0


@given(
    remaining=st.lists(st.floats(min_value=1.0, max_value=1e5), max_size=12),
    ninstances=st.integers(min_value=1, max_value=4),
    horizon=st.floats(min_value=1.0, max_value=1e5),
)
def test_shortfall_is_between_zero_and_capacity(
    remaining: list[float], ninstances: int, horizon: float
) -> None:
    jobs = [_job(i, "AB"[i % 2], r) for i, r in enumerate(remaining)]
    result = rr_simulate(jobs, {CPU: float(ninstances)}, {"A": 1, "B": 2}, now=0.0, horizon=horizon)
    assert 0.0 <= result.resources[CPU].shortfall <= ninstances * horizon * (1 + 1e-9)
