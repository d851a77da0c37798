from __future__ import annotations

import random

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import DAY, ClientPrefs, HostSpec, ProjectSpec, ResourceSpec
from apps.emulator.domain.policies.rec import RecPolicy, project_priority, update_rec
from apps.emulator.domain.state import ClientState, SimJob, SimProject

CPU, GPU = ProcType.CPU, ProcType.NVIDIA
HOST = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9), ResourceSpec(GPU, 1, 2e9)))
FLOPS = {CPU: 1e9, GPU: 2e9}


def _setup(*shares: tuple[str, float]) -> tuple[ClientState, RecPolicy]:
    projects = {
        n: SimProject(ProjectSpec(name=n, resource_share=s, apps=()), attached=True) for n, s in shares
    }
    state = ClientState(host=HOST, prefs=ClientPrefs(), projects=projects, rng=random.Random(1))
    policy = RecPolicy()
    for name, _ in shares:
        policy.attach(state, name)
    return state, policy


def _add(state: ClientState, key: int, project: str, proc: ProcType, seconds: float) -> SimJob:
    flops = FLOPS[proc]
    job = SimJob(key, project, "app", proc, 1.0, seconds * flops, seconds * flops, flops, 1e9, 0.0)
    state.add_job(job)
    return job


def test_rec_halves_after_one_half_life_without_credit() -> None:
    assert update_rec(100.0, 0.0, 10 * DAY, 10 * DAY) == pytest.approx(50.0)


def test_rec_converges_to_the_credit_rate_per_day() -> None:
    rec = 0.0
    for _ in range(24 * 300):  # 30 half-lives
        rec = update_rec(rec, 2.0, 3600.0, 10 * DAY)
    assert rec == pytest.approx(48.0, rel=1e-3)


def test_lower_rec_fraction_means_higher_priority() -> None:
    assert project_priority(10.0, 40.0, 100, 200) > project_priority(30.0, 40.0, 100, 200)


def test_zero_share_project_comes_last() -> None:
    assert project_priority(0.0, 40.0, 0, 200) < project_priority(40.0, 40.0, 100, 200)


def test_no_fetch_while_buffers_are_above_minimum() -> None:
    state, policy = _setup(("A", 100), ("B", 100))
    _add(state, 1, "A", CPU, 0.2 * DAY)  # above work_buf_min (0.1 d), below the total (0.35 d)
    _add(state, 2, "A", GPU, 0.2 * DAY)
    assert policy.work_fetch(state) is None


def test_fetches_from_highest_priority_project_when_a_buffer_is_low() -> None:
    state, policy = _setup(("A", 100), ("B", 100))
    policy.rec = {"A": 10.0, "B": 1.0}
    assert policy.work_fetch(state).project == "B"


def test_fetch_fills_low_resource_up_to_the_total_buffer() -> None:
    state, policy = _setup(("A", 100))
    _add(state, 1, "A", CPU, 0.2 * DAY)
    choice = policy.work_fetch(state)
    assert choice.request.req_secs[GPU] == pytest.approx(0.35 * DAY)


def test_fetch_adds_other_resources_below_total_buffer() -> None:
    state, policy = _setup(("A", 100))
    _add(state, 1, "A", CPU, 0.2 * DAY)
    assert policy.work_fetch(state).request.requested_types == frozenset({CPU, GPU})


def test_credit_counts_gpu_at_its_speed() -> None:
    state, policy = _setup(("A", 100), ("B", 100))
    policy.account(state, 3600.0, {("A", CPU): 3600.0, ("B", GPU): 3600.0})
    assert policy.rec["B"] == pytest.approx(2 * policy.rec["A"])


def test_lower_rec_project_runs_on_the_gpu() -> None:
    state, policy = _setup(("A", 100), ("B", 100))
    policy.rec = {"A": 10.0, "B": 1.0}
    _add(state, 1, "A", GPU, 3600.0)
    b_job = _add(state, 2, "B", GPU, 3600.0)
    policy.schedule(state, preempt=True)
    assert b_job.running is True


def test_picks_interleave_projects_on_many_cpus() -> None:
    host = HostSpec(resources=(ResourceSpec(CPU, 4, 1e9),))
    projects = {n: SimProject(ProjectSpec(name=n, resource_share=100, apps=()), attached=True) for n in "AB"}
    state = ClientState(host=host, prefs=ClientPrefs(), projects=projects, rng=random.Random(1))
    policy = RecPolicy()
    for name in "AB":
        policy.attach(state, name)
    policy.rec = {"A": 10.0, "B": 10.0}
    for key in range(8):
        _add(state, key, "AB"[key % 2], CPU, 3600.0)
    policy.schedule(state, preempt=True)
    assert sorted(j.project for j in state.jobs if j.running) == ["A", "A", "B", "B"]
