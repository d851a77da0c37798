from __future__ import annotations

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain import ScenarioError, load_scenario
from apps.emulator.domain.shaping import AppShape, VersionShape, shape_project, stand_in_project

CPU, GPU = ProcType.CPU, ProcType.NVIDIA


def _example1():
    return load_scenario("example1_gpu_sharing")


def _app(*versions: VersionShape, name: str = "real") -> AppShape:
    return AppShape(name=name, fpops_est=3.6e12, latency_bound=86400.0, versions=versions)


def test_project_named_like_the_slug_stands_in() -> None:
    assert stand_in_project(_example1(), "B") == "B"


def test_first_project_stands_in_when_no_name_matches() -> None:
    assert stand_in_project(_example1(), "einstein") == "A"


def test_stand_in_takes_the_project_apps() -> None:
    shaped = shape_project(_example1(), project="B", apps=[_app(VersionShape(CPU, 1.0), name="real")])
    assert [a.name for a in shaped.project("B").apps] == ["real"]


def test_other_projects_keep_their_apps() -> None:
    shaped = shape_project(_example1(), project="B", apps=[_app(VersionShape(CPU, 1.0))])
    assert [a.name for a in shaped.project("A").apps] == ["a_gpu"]


def test_version_for_a_resource_the_host_lacks_is_dropped() -> None:
    shaped = shape_project(
        _example1(), project="B", apps=[_app(VersionShape(CPU, 1.0), VersionShape(ProcType.ATI, 1.0))]
    )
    assert [v.proc_type for v in shaped.project("B").apps[0].versions] == [CPU]


def test_multi_thread_version_uses_every_cpu() -> None:
    scenario = load_scenario("three_projects_100_jobs")
    shaped = shape_project(
        scenario, project="Rosetta", apps=[_app(VersionShape(CPU, 1.0, multi_thread=True))]
    )
    assert shaped.project("Rosetta").apps[0].versions[0].usage == 4.0


def test_one_version_is_kept_per_resource_type() -> None:
    shaped = shape_project(
        _example1(), project="B", apps=[_app(VersionShape(GPU, 0.5), VersionShape(GPU, 1.0))]
    )
    assert shaped.project("B").apps[0].versions[0].usage == 1.0


def test_project_without_a_runnable_app_is_refused() -> None:
    with pytest.raises(ScenarioError, match="no app"):
        shape_project(_example1(), project="B", apps=[_app(VersionShape(ProcType.ATI, 1.0))])
