from __future__ import annotations

import random

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import DAY, ClientPrefs, HostSpec, ProjectSpec, ResourceSpec
from apps.emulator.domain.policies.base import FetchChoice
from apps.emulator.domain.policies.v4 import Urgency, V4Policy, compute_work_request, ettprc, min_results
from apps.emulator.domain.server import WorkRequest
from apps.emulator.domain.state import ClientState, SimJob, SimProject

CPU, GPU = ProcType.CPU, ProcType.NVIDIA
HOST = HostSpec(resources=(ResourceSpec(CPU, 2, 1e9), ResourceSpec(GPU, 1, 2e9)))


def _setup(*names: str) -> tuple[ClientState, V4Policy]:
    projects = {n: SimProject(ProjectSpec(name=n, resource_share=100, apps=()), attached=True) for n in names}
    state = ClientState(host=HOST, prefs=ClientPrefs(), projects=projects, rng=random.Random(1))
    policy = V4Policy()
    for name in names:
        policy.attach(state, name)
    return state, policy


def _add(
    state: ClientState, key: int, project: str, *, deadline: float = 1e9, proc: ProcType = CPU
) -> SimJob:
    job = SimJob(key, project, "app", proc, 1.0, 3.6e12, 3.6e12, 1e9, deadline, 0.0)
    state.add_job(job)
    return job


def test_min_results_is_ceiling_of_cpus_times_share() -> None:
    assert min_results(4, 100, 300) == 2


def test_ettprc_skips_latest_deadline_results() -> None:
    assert ettprc([10.0, 20.0, 30.0], 1, 0.5) == 60.0


def test_empty_queue_needs_work_immediately() -> None:
    urgency, requests = compute_work_request({"A": []}, {"A": 1.0}, ncpus=2, connection_period=DAY)
    assert (urgency, requests["A"]) == (Urgency.NEED_WORK_IMMEDIATELY, 4 * DAY)


def test_starving_within_connection_period_needs_work() -> None:
    urgency, requests = compute_work_request({"A": [DAY, DAY]}, {"A": 1.0}, ncpus=2, connection_period=DAY)
    assert (urgency, requests["A"]) == (Urgency.NEED_WORK, 3 * DAY)


def test_enough_queued_work_needs_none() -> None:
    urgency, requests = compute_work_request(
        {"A": [DAY, DAY, DAY], "B": []}, {"A": 1.0, "B": 0.0}, ncpus=1, connection_period=DAY
    )
    assert (urgency, requests) == (Urgency.DONT_NEED_WORK, {"A": 0.0, "B": 0.0})


def test_request_is_old_style_work_req_seconds() -> None:
    state, policy = _setup("A")
    choice = policy.work_fetch(state)
    assert (choice.request.rsc_spec_request, choice.request.work_req_seconds) == (
        False,
        pytest.approx(0.4 * DAY),
    )


def test_project_without_work_is_backed_off() -> None:
    state, policy = _setup("A")
    policy.handle_reply(
        state, FetchChoice("A", WorkRequest(work_req_seconds=1.0, rsc_spec_request=False), ""), ()
    )
    assert policy.work_fetch(state) is None


def test_largest_debt_project_gets_the_cpu_first() -> None:
    state, policy = _setup("A", "B")
    host = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9),))
    state.host = host
    policy.debt = {"A": -100.0, "B": 100.0}
    _add(state, 1, "A")
    b_job = _add(state, 2, "B")
    policy.schedule(state, preempt=True)
    assert b_job.running is True


def test_new_results_start_earliest_deadline_first() -> None:
    state, policy = _setup("A")
    state.host = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9),))
    _add(state, 1, "A", deadline=2 * DAY)
    early = _add(state, 2, "A", deadline=DAY)
    policy.schedule(state, preempt=True)
    assert early.running is True


def test_preempted_result_resumes_before_a_new_one() -> None:
    state, policy = _setup("A")
    state.host = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9),))
    _add(state, 1, "A", deadline=DAY)
    preempted = _add(state, 2, "A", deadline=2 * DAY)
    preempted.started = True
    policy.schedule(state, preempt=True)
    assert preempted.running is True


def test_gpu_jobs_never_run() -> None:
    state, policy = _setup("A")
    gpu_job = _add(state, 1, "A", proc=GPU)
    policy.schedule(state, preempt=True)
    assert gpu_job.running is False


def test_debt_reset_for_project_without_cpu_results() -> None:
    state, policy = _setup("A", "B")
    policy.debt = {"A": 500.0, "B": 0.0}
    _add(state, 1, "B")
    policy.account(state, 60.0, {("B", CPU): 60.0})
    assert policy.debt["A"] == 0.0
