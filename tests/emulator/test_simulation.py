from __future__ import annotations

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain import load_scenario, run_scenario
from apps.emulator.domain.model import DAY

CPU = ProcType.CPU

ONE_CPU = """
name: one-cpu
duration_days: {days}
host:
  resources:
    - {{type: CPU, ninstances: 1, flops: 1.0e9}}
projects:
{projects}
"""


def _scenario(projects: str, days: float = 3):
    return load_scenario(ONE_CPU.format(days=days, projects=projects))


def test_same_scenario_gives_the_same_report() -> None:
    scenario = load_scenario("three_projects_100_jobs")
    assert run_scenario(scenario, "rec", days=1) == run_scenario(scenario, "rec", days=1)


def test_days_override_duration() -> None:
    assert run_scenario(load_scenario("example1_gpu_sharing"), "rec", days=0.5).duration == 0.5 * DAY


@pytest.mark.parametrize("policy", ["v4", "v6-gpu", "rec"])
def test_resource_shares_never_exceed_capacity(policy: str) -> None:
    report = run_scenario(load_scenario("three_projects_100_jobs"), policy, days=2)
    for proc in report.resources:
        assert sum(report.share(p, proc) for p in report.projects) <= 1.0 + 1e-9


def test_project_without_work_leaves_host_idle() -> None:
    report = run_scenario(_scenario("  - {name: A, apps: []}"), "rec")
    assert report.figures.idle_fraction == 1.0


def test_job_finished_after_deadline_is_wasted() -> None:
    projects = """  - name: A
    queued_jobs: [{app: a, resource: CPU, fpops: 1.728e14, deadline_days: 1}]"""
    report = run_scenario(_scenario(projects), "rec")
    assert report.figures.wasted_fraction == pytest.approx(2 / 3)


def test_job_still_running_past_its_deadline_when_the_run_ends_is_missed() -> None:
    # Two days of work, due in one day, on a run of one and a half days.
    projects = """  - name: A
    queued_jobs: [{app: a, resource: CPU, fpops: 1.728e14, deadline_days: 1}]"""
    report = run_scenario(_scenario(projects, days=1.5), "rec")
    assert (report.n_jobs_completed, report.n_jobs_missed) == (0, 1)
    assert report.figures.wasted_fraction == pytest.approx(1.0)  # every FLOP so far is too late


def test_job_still_running_before_its_deadline_when_the_run_ends_is_not_missed() -> None:
    projects = """  - name: A
    queued_jobs: [{app: a, resource: CPU, fpops: 1.728e14, deadline_days: 3}]"""
    report = run_scenario(_scenario(projects, days=1.5), "rec")
    assert (report.n_jobs_missed, report.figures.wasted_fraction) == (0, 0.0)


def test_unstarted_job_past_its_deadline_when_the_run_ends_is_aborted() -> None:
    # The second job waits behind the first and falls due just before the run ends.
    projects = """  - name: A
    queued_jobs:
      - {app: a, resource: CPU, fpops: 1.728e14, deadline_days: 1.2}
      - {app: a, resource: CPU, fpops: 8.64e13, deadline_days: 1.4999}"""
    report = run_scenario(_scenario(projects, days=1.5), "rec")
    assert (report.n_jobs_missed, report.n_jobs_aborted) == (1, 1)


def test_unstarted_job_past_deadline_is_aborted() -> None:
    projects = """  - name: A
    queued_jobs:
      - {app: a, resource: CPU, fpops: 8.64e13, deadline_days: 0.9}
      - {app: a, resource: CPU, fpops: 8.64e13, deadline_days: 0.95}"""
    assert run_scenario(_scenario(projects), "rec").n_jobs_aborted == 1


def test_one_project_running_all_the_time_has_no_monotony() -> None:
    projects = """  - name: A
    queued_jobs: [{app: a, resource: CPU, fpops: 2.592e14, deadline_days: 10}]"""
    assert run_scenario(_scenario(projects), "rec").figures.monotony == 0.0


def test_rpcs_per_job_counts_two_per_job() -> None:
    report = run_scenario(load_scenario("example1_gpu_sharing"), "rec", days=2)
    assert report.figures.rpcs_per_job == report.n_rpcs / (2 * report.n_jobs_received)


def test_project_attached_later_gets_nothing_before() -> None:
    projects = """  - name: A
    apps: [{name: a, fpops_est: 3.6e12, versions: [{resource: CPU}]}]
  - name: B
    attach_days: 2
    apps: [{name: b, fpops_est: 3.6e12, versions: [{resource: CPU}]}]"""
    report = run_scenario(_scenario(projects), "rec")
    assert report.share("B", CPU, start=0, end=2 * DAY) == 0.0


def test_equal_shares_split_one_cpu_evenly() -> None:
    projects = """  - name: A
    apps: [{name: a, fpops_est: 3.6e12, versions: [{resource: CPU}]}]
  - name: B
    apps: [{name: b, fpops_est: 3.6e12, versions: [{resource: CPU}]}]"""
    report = run_scenario(_scenario(projects, days=10), "v6-gpu")
    assert report.share("A", CPU) == pytest.approx(0.5, abs=0.02)
