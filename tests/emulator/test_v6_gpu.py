from __future__ import annotations

import random

from apps.core.domain.resources import ProcType
from apps.emulator.domain.backoff import Backoff
from apps.emulator.domain.model import DAY, ClientPrefs, HostSpec, ProjectSpec, ResourceSpec
from apps.emulator.domain.policies.base import FetchChoice
from apps.emulator.domain.policies.v6_gpu import V6GpuPolicy
from apps.emulator.domain.server import SentJob, WorkRequest
from apps.emulator.domain.state import ClientState, SimJob, SimProject

CPU, GPU = ProcType.CPU, ProcType.NVIDIA
HOST = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9), ResourceSpec(GPU, 1, 2e9)))


def _setup(*names: str) -> tuple[ClientState, V6GpuPolicy]:
    projects = {n: SimProject(ProjectSpec(name=n, resource_share=100, apps=()), attached=True) for n in names}
    state = ClientState(host=HOST, prefs=ClientPrefs(), projects=projects, rng=random.Random(1))
    policy = V6GpuPolicy()
    for name in names:
        policy.attach(state, name)
    return state, policy


def _add(
    state: ClientState, key: int, project: str, proc: ProcType, seconds: float, deadline: float = 1e9
) -> SimJob:
    flops = {CPU: 1e9, GPU: 2e9}[proc]
    job = SimJob(key, project, "app", proc, 1.0, seconds * flops, seconds * flops, flops, deadline, 0.0)
    state.add_job(job)
    return job


def test_major_shortfall_on_gpu_comes_before_cpu() -> None:
    state, policy = _setup("A", "B")
    choice = policy.work_fetch(state)
    assert (choice.reason, choice.request.requested_types) == ("major shortfall", frozenset({GPU}))


def test_major_shortfall_asks_greatest_overall_debt_project() -> None:
    state, policy = _setup("A", "B")
    policy.ltd[GPU] = {"A": -100.0, "B": 0.0}
    assert policy.work_fetch(state).project == "B"


def test_project_backed_off_for_a_resource_is_not_asked_for_it() -> None:
    state, policy = _setup("A", "B")
    policy.ltd[GPU] = {"A": -100.0, "B": 0.0}
    policy.backoff[("B", GPU)] = Backoff(interval=600.0, until=600.0)
    assert policy.work_fetch(state).project == "A"


def test_minor_shortfall_asks_for_all_types_with_a_shortfall() -> None:
    state, policy = _setup("A", "B")
    _add(state, 1, "A", CPU, 20000.0)  # busy past CI (8640 s), idle before CI+AW (30240 s)
    _add(state, 2, "A", GPU, 20000.0)
    choice = policy.work_fetch(state)
    assert (choice.reason, choice.request.requested_types) == ("minor shortfall", frozenset({CPU, GPU}))


def test_minor_shortfall_skips_overworked_project() -> None:
    state, policy = _setup("A", "B")
    _add(state, 1, "A", CPU, 20000.0)  # busy past CI, idle before CI+AW: a minor shortfall
    _add(state, 2, "A", GPU, 20000.0)
    policy.backoff[("A", CPU)] = policy.backoff[("A", GPU)] = Backoff(interval=600.0, until=600.0)
    policy.ltd[CPU] = {"A": 0.0, "B": -10 * DAY}  # B: far below A's overall debt
    assert policy.work_fetch(state) is None


def test_project_below_the_top_but_within_a_day_is_not_overworked() -> None:
    state, policy = _setup("A", "B")
    _add(state, 1, "A", CPU, 20000.0)
    _add(state, 2, "A", GPU, 20000.0)
    policy.backoff[("A", CPU)] = policy.backoff[("A", GPU)] = Backoff(interval=600.0, until=600.0)
    policy.ltd[CPU] = {"A": 0.0, "B": -0.5 * DAY}
    assert policy.work_fetch(state).project == "B"


def test_overworked_is_measured_against_the_top_overall_debt() -> None:
    state, policy = _setup("A", "B")
    # Example 1's balance: both resource debts drift, their speed-weighted sums stay level.
    policy.ltd = {CPU: {"A": 0.0, "B": -30 * DAY}, GPU: {"A": -15 * DAY, "B": 0.0}}
    assert policy.overworked_projects(state, policy.overall_debts(state)) == set()


def test_overworked_project_owes_more_than_a_day_of_the_whole_host() -> None:
    state, policy = _setup("A", "B")
    policy.ltd[CPU] = {"A": -3.1 * DAY, "B": 0.0}  # the host does 3 CPU-days a day
    assert policy.overworked_projects(state, policy.overall_debts(state)) == {"A"}


def test_starved_project_is_asked_when_buffers_are_full() -> None:
    state, policy = _setup("A", "B")
    _add(state, 1, "A", CPU, 2 * DAY)
    _add(state, 2, "A", GPU, 2 * DAY)
    choice = policy.work_fetch(state)
    assert (choice.reason, choice.project) == ("starved project", "B")


def test_nothing_to_fetch_when_buffers_full_and_nobody_starved() -> None:
    state, policy = _setup("A")
    _add(state, 1, "A", CPU, 2 * DAY)
    _add(state, 2, "A", GPU, 2 * DAY)
    assert policy.work_fetch(state) is None


def test_requested_type_without_a_job_is_backed_off() -> None:
    state, policy = _setup("A")
    choice = FetchChoice("A", WorkRequest(req_secs={GPU: 100.0}), "major shortfall")
    policy.handle_reply(state, choice, ())
    assert policy.backoff[("A", GPU)].interval == 600.0


def test_job_of_a_type_clears_its_backoff() -> None:
    state, policy = _setup("A")
    policy.backoff[("A", GPU)] = Backoff(interval=DAY, until=DAY)
    job = SentJob(app="app", proc_type=GPU, usage=1.0, fpops=1e12, fpops_est=1e12, deadline=DAY)
    policy.handle_reply(state, FetchChoice("A", WorkRequest(req_secs={CPU: 1.0}), "minor shortfall"), (job,))
    assert policy.backoff[("A", GPU)] == Backoff()


def test_project_at_max_backoff_is_not_debt_eligible() -> None:
    state, policy = _setup("A")
    policy.backoff[("A", CPU)] = Backoff(interval=DAY, until=0.0)
    assert policy.debt_eligible(state, "A", CPU) is False


def test_backed_off_project_is_not_debt_eligible() -> None:
    state, policy = _setup("A")
    policy.backoff[("A", CPU)] = Backoff(interval=600.0, until=600.0)
    assert policy.debt_eligible(state, "A", CPU) is False


def test_project_with_a_job_is_debt_eligible_for_every_type() -> None:
    state, policy = _setup("A")
    _add(state, 1, "A", GPU, 3600.0)
    policy.backoff[("A", CPU)] = Backoff(interval=DAY, until=DAY)
    assert policy.debt_eligible(state, "A", CPU) is True


def test_literal_eligibility_applies_the_backoff_rule_to_projects_with_jobs() -> None:
    state, _ = _setup("A")
    policy = V6GpuPolicy(literal_eligibility=True)
    policy.attach(state, "A")
    _add(state, 1, "A", GPU, 3600.0)
    policy.backoff[("A", CPU)] = Backoff(interval=DAY, until=0.0)
    assert policy.debt_eligible(state, "A", CPU) is False


def test_gpu_only_project_is_owed_cpu_time_its_rival_uses() -> None:
    state, policy = _setup("A", "B")
    _add(state, 1, "A", GPU, 3600.0)
    policy.backoff[("A", CPU)] = Backoff(interval=DAY, until=DAY)  # A has no CPU app
    policy.account(state, 3600.0, {("B", CPU): 3600.0, ("A", GPU): 3600.0})
    assert policy.ltd[CPU] == {"A": 0.0, "B": -3600.0}


def test_ineligible_project_use_of_others_does_not_move_debt() -> None:
    state, policy = _setup("A", "B")
    policy.backoff[("A", CPU)] = Backoff(interval=DAY, until=0.0)
    policy.account(state, 3600.0, {("B", CPU): 3600.0})
    assert policy.ltd[CPU] == {"A": 0.0, "B": 0.0}


def test_eligible_projects_share_cpu_debt() -> None:
    state, policy = _setup("A", "B")
    policy.account(state, 3600.0, {("B", CPU): 3600.0})
    assert policy.ltd[CPU] == {"A": 0.0, "B": -3600.0}


def test_new_project_starts_at_zero_long_term_debt() -> None:
    state, policy = _setup("A", "B")
    policy.account(state, 3600.0, {("B", CPU): 3600.0})
    state.projects["C"] = SimProject(ProjectSpec(name="C", resource_share=100, apps=()), attached=True)
    policy.attach(state, "C")
    assert policy.ltd[CPU]["C"] == max(policy.ltd[CPU].values())


def test_overall_debt_weights_gpu_by_its_speed() -> None:
    state, policy = _setup("A")
    policy.ltd = {CPU: {"A": -100.0}, GPU: {"A": -10.0}}
    assert policy.overall_debt(state, "A") == -120.0


def test_job_in_deadline_danger_runs_first() -> None:
    state, policy = _setup("A", "B")
    policy.std = {"A": 1000.0, "B": -1000.0}
    _add(state, 1, "A", CPU, 3600.0)
    urgent = _add(state, 2, "B", CPU, 3600.0, deadline=4000.0)
    policy.schedule(state, preempt=True)
    assert urgent.running is True


def test_largest_short_term_debt_runs_on_the_cpu() -> None:
    state, policy = _setup("A", "B")
    policy.std = {"A": -100.0, "B": 100.0}
    _add(state, 1, "A", CPU, 3600.0)
    b_job = _add(state, 2, "B", CPU, 3600.0)
    policy.schedule(state, preempt=True)
    assert b_job.running is True


def test_running_job_is_not_preempted_between_time_slices() -> None:
    state, policy = _setup("A", "B")
    running = _add(state, 1, "A", CPU, 3600.0)
    running.running = running.started = True
    policy.std = {"A": -100.0, "B": 100.0}
    _add(state, 2, "B", CPU, 3600.0)
    policy.schedule(state, preempt=False)
    assert running.running is True


def test_gpu_jobs_run_in_deadline_order_whatever_the_debts() -> None:
    state, policy = _setup("A", "B")
    policy.ltd[GPU] = {"A": -DAY, "B": 0.0}
    policy.std = {"A": -DAY, "B": DAY}
    first = _add(state, 1, "A", GPU, 3600.0, deadline=2 * DAY)
    _add(state, 2, "B", GPU, 3600.0, deadline=3 * DAY)
    policy.schedule(state, preempt=True)
    assert first.running is True


def test_running_gpu_job_keeps_its_gpu_between_time_slices() -> None:
    state, policy = _setup("A", "B")
    running = _add(state, 1, "A", GPU, 3600.0, deadline=3 * DAY)
    running.running = running.started = True
    _add(state, 2, "B", GPU, 3600.0, deadline=2 * DAY)
    policy.schedule(state, preempt=False)
    assert running.running is True


def test_job_in_deadline_danger_lowers_anticipated_debt() -> None:
    # Client 6.x charged the anticipated debt of every job it scheduled, EDF ones too: A's
    # urgent job takes one CPU and A drops to 100 - 3600, so the other CPU goes to B.
    state, policy = _setup("A", "B")
    state.host = HostSpec(resources=(ResourceSpec(CPU, 2, 1e9),))
    policy.std = {"A": 100.0, "B": 0.0}
    urgent = _add(state, 1, "A", CPU, 3600.0, deadline=3000.0)
    _add(state, 2, "A", CPU, 3600.0)
    _add(state, 3, "B", CPU, 3600.0)
    policy.schedule(state, preempt=True)
    assert (urgent.running, sorted(j.project for j in state.jobs if j.running)) == (True, ["A", "B"])


def test_new_project_starts_level_with_a_project_left_alone_with_work() -> None:
    # The work-fetch design's Example 2 variation: A's job has just ended with B at the +1 day clamp and
    # A at -1 day; C attaches. B, alone with work, is back at mean zero, and C joins it there.
    state, policy = _setup("A", "B")
    policy.std = {"A": -DAY, "B": DAY}
    _add(state, 1, "B", CPU, 3600.0)
    state.projects["C"] = SimProject(ProjectSpec(name="C", resource_share=100, apps=()), attached=True)
    policy.attach(state, "C")
    assert policy.std == {"A": 0.0, "B": 0.0, "C": 0.0}


def test_major_shortfall_moment_is_a_wakeup_that_fetches() -> None:
    # The work-fetch design runs work fetch every 60 s. One CPU; A's 20000 s job leaves it idle at
    # 20000 s, so a major shortfall (idle before CI = 8640 s) starts at 11360 s. A is
    # overworked (no minor shortfall fetch) and B is backed off until 1e6 s, so nothing is
    # fetched now; at 11360 s get_major_shortfall returns A ("P may be overworked").
    state, policy = _setup("A", "B")
    state.host = HostSpec(resources=(ResourceSpec(CPU, 1, 1e9),))
    job = _add(state, 1, "A", CPU, 20000.0)
    job.running = job.started = True
    policy.ltd = {CPU: {"A": -1e6, "B": 0.0}}
    policy.backoff[("B", CPU)] = Backoff(interval=600.0, until=1e6)
    assert policy.work_fetch(state) is None
    wake = policy.next_wakeup(state)
    assert wake == 11360.0
    job.done_fpops = job.flops * wake
    state.now = wake
    choice = policy.work_fetch(state)
    assert (choice.project, choice.reason) == ("A", "major shortfall")
