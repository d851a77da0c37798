from __future__ import annotations

import random

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import DAY, ClientPrefs, HostSpec, ProjectSpec, ResourceSpec
from apps.emulator.domain.policies.base import FetchChoice
from apps.emulator.domain.policies.v4 import (
    Urgency,
    V4Policy,
    compute_work_request,
    ettprc,
    ettprc_falls_below,
    min_results,
)
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
    state: ClientState,
    key: int,
    project: str,
    *,
    deadline: float = 1e9,
    proc: ProcType = CPU,
    running: bool = False,
    slice_start: float = 0.0,
) -> SimJob:
    job = SimJob(key, project, "app", proc, 1.0, 3.6e12, 3.6e12, 1e9, deadline, 0.0)
    job.running = job.started = running
    job.slice_start = slice_start
    state.add_job(job)
    return job


def _running_projects(state: ClientState) -> list[str]:
    return sorted(j.project for j in state.jobs if j.running)


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


def test_running_job_kept_lowers_its_projects_anticipated_debt() -> None:
    # The 4.x client: every CPU handed out, the one a running job keeps included, lowers its
    # project's anticipated debt by the expected CPU time. A (100) keeps one CPU and drops
    # to 100 - 3600; the idle CPU then goes to B (0).
    state, policy = _setup("A", "B")
    state.now = 1800.0
    _add(state, 1, "A", running=True)
    _add(state, 2, "A")
    _add(state, 3, "B")
    policy.debt = {"A": 100.0, "B": 0.0}
    policy.schedule(state, preempt=False)
    assert _running_projects(state) == ["A", "B"]


def test_running_jobs_inside_their_time_slice_are_preempted_by_debt() -> None:
    # The 4.x client has no time slice: each pass gives every CPU to the largest anticipated
    # debt. B (5000, then 5000 - 3600 = 1400) beats A (-5000) for both CPUs, though A's
    # jobs started half a scheduling period ago.
    state, policy = _setup("A", "B")
    state.now = 3600.0
    _add(state, 1, "A", running=True, slice_start=1800.0)
    _add(state, 2, "A", running=True, slice_start=1800.0)
    _add(state, 3, "B")
    _add(state, 4, "B")
    policy.debt = {"A": -5000.0, "B": 5000.0}
    policy.schedule(state, preempt=True)
    assert _running_projects(state) == ["B", "B"]


def test_ettprc_falls_at_the_cpus_the_counted_results_use() -> None:
    # Counted: the 6000 s and 4000 s results (the latest-deadline one is skipped), two CPUs
    # at rate 0.5: ETTPRC 20000 falls 2 / 0.5 = 4 s a second and reaches T = 8000 in 3000 s.
    queue = [(6000.0, 1.0), (4000.0, 1.0), (9000.0, 0.0)]
    assert ettprc_falls_below(queue, 1, 0.5, 8000.0) == 3000.0


def test_ettprc_of_a_project_not_running_does_not_fall() -> None:
    assert ettprc_falls_below([(20000.0, 0.0)], 0, 1.0, 8640.0) is None


def test_client_wakes_when_ettprc_falls_below_the_connection_period() -> None:
    # The 4.x client checks the work request once a second. One CPU, one project, T = CI = 8640 s:
    # the running 20000 s result brings ETTPRC below T at 11360 s; the client wakes at the
    # next once-a-second check and asks for work.
    state, policy = _setup("A")
    state.host = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9),))
    job = SimJob(1, "A", "app", CPU, 1.0, 2e13, 2e13, 1e9, 1e12, 0.0, running=True, started=True)
    state.add_job(job)
    assert policy.work_fetch(state) is None
    wake = policy.next_wakeup(state)
    assert wake == 11361.0
    job.done_fpops = job.flops * wake
    state.now = wake
    assert policy.work_fetch(state).reason == "NEED_WORK"
