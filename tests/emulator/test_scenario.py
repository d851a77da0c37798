from __future__ import annotations

import json

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import DAY
from apps.emulator.domain.scenario import ScenarioError, bundled_scenarios, load_scenario

MINIMAL = """
name: tiny
duration_days: 2
host:
  resources:
    - {type: CPU, ninstances: 2, flops: 1.0e9}
    - {type: cuda, ninstances: 1, flops: 5.0e9}
projects:
  - name: A
    resource_share: 50
    apps:
      - {name: a, fpops_est: 3.6e12, latency_bound_days: 3, versions: [{resource: CPU}]}
    queued_jobs:
      - {app: a, resource: CPU, fpops: 3.6e12, deadline_days: 1, count: 3}
"""


def test_bundled_scenarios_are_the_design_examples_and_the_benchmark() -> None:
    assert sorted(bundled_scenarios()) == [
        "example1_gpu_sharing",
        "example2_high_priority",
        "example2_new_project",
        "example3_new_gpu_app",
        "example3_with_cpu_work",
        "three_projects_100_jobs",
        "two_projects_cpu_only",
    ]


@pytest.mark.parametrize("name", sorted(bundled_scenarios()))
def test_bundled_scenario_loads(name: str) -> None:
    assert load_scenario(bundled_scenarios()[name]).projects != ()


def test_load_by_bundled_name() -> None:
    assert load_scenario("example1_gpu_sharing").name == "example1-gpu-sharing"


def test_days_become_seconds() -> None:
    assert load_scenario(MINIMAL).duration == 2 * DAY


def test_gpu_type_aliases_are_accepted() -> None:
    assert load_scenario(MINIMAL).host.resources[1].proc_type is ProcType.NVIDIA


def test_queued_job_count_expands() -> None:
    assert len(load_scenario(MINIMAL).projects[0].queued_jobs) == 3


def test_json_text_is_accepted() -> None:
    data = {
        "name": "json",
        "host": {"resources": [{"type": "CPU", "ninstances": 1, "flops": 1e9}]},
        "projects": [{"name": "A"}],
    }
    assert load_scenario(json.dumps(data)).name == "json"


def test_client_defaults_are_boinc_defaults() -> None:
    prefs = load_scenario(MINIMAL).prefs
    assert (prefs.work_buf_min, prefs.work_buf_additional, prefs.rec_half_life) == (
        0.1 * DAY,
        0.25 * DAY,
        10 * DAY,
    )


def test_host_without_cpu_is_rejected() -> None:
    text = MINIMAL.replace("- {type: CPU, ninstances: 2, flops: 1.0e9}", "")
    with pytest.raises(ScenarioError, match="a CPU is required"):
        load_scenario(text)


def test_unknown_resource_type_is_rejected() -> None:
    with pytest.raises(ScenarioError, match="unknown resource type"):
        load_scenario(MINIMAL.replace("type: cuda", "type: tpu"))


def test_negative_resource_share_is_rejected() -> None:
    with pytest.raises(ScenarioError, match="resource_share must be at least 0"):
        load_scenario(MINIMAL.replace("resource_share: 50", "resource_share: -1"))


def test_duplicate_project_names_are_rejected() -> None:
    text = MINIMAL + "  - {name: A, apps: []}\n"
    with pytest.raises(ScenarioError, match="names must be unique"):
        load_scenario(text)


def test_app_without_size_is_rejected() -> None:
    with pytest.raises(ScenarioError, match="fpops_est is required"):
        load_scenario(MINIMAL.replace("fpops_est: 3.6e12, ", ""))


def test_non_mapping_text_is_rejected() -> None:
    with pytest.raises(ScenarioError, match="must be a mapping"):
        load_scenario("- just\n- a list\n")
