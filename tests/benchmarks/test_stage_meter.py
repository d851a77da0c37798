"""The stage meter behind bench_pipeline's table: CPU and statements per stage, per process."""

from __future__ import annotations

import json

import pytest

from apps.benchmarks import stage_meter
from apps.core.stages import stage
from apps.projects.models import Project


@pytest.fixture
def meter():
    stage_meter.stage_totals_reset()
    stage_meter.stage_meter_enable()
    yield
    stage_meter.stage_meter_disable()
    stage_meter.stage_totals_reset()


def test_off_until_a_benchmark_enables_it_nothing_is_counted():
    stage_meter.stage_totals_reset()
    with stage("upload"):
        pass
    assert stage_meter.stage_totals() == {}


@pytest.mark.django_db
def test_a_stage_counts_its_statements_and_calls(meter):
    with stage("validator"):
        Project.objects.count()
        Project.objects.count()
    with stage("validator"):
        Project.objects.count()
    cpu, statements, calls = stage_meter.stage_totals()["validator"]
    assert (statements, calls) == (3, 2)
    assert cpu >= 0


@pytest.mark.django_db
def test_nested_stages_each_count_what_ran_inside_them(meter):
    with stage("scheduler_rpc"):
        Project.objects.count()
        with stage("dispatch"):
            Project.objects.count()
    totals = stage_meter.stage_totals()
    assert totals["scheduler_rpc"][1] == 2
    assert totals["dispatch"][1] == 1


def test_a_stage_that_raises_is_still_counted(meter):
    with pytest.raises(ValueError, match="hook failed"), stage("assimilator"):
        raise ValueError("hook failed")
    assert stage_meter.stage_totals()["assimilator"][2] == 1


def test_totals_of_several_processes_are_summed(tmp_path):
    (tmp_path / "101.json").write_text(json.dumps({"upload": [0.5, 10, 4], "validator": [1.0, 3, 1]}))
    (tmp_path / "102.json").write_text(json.dumps({"upload": [0.25, 5, 2]}))
    (tmp_path / "103.tmp").write_text("{half written")
    assert stage_meter.stage_totals_read(tmp_path) == {"upload": (0.75, 15, 6), "validator": (1.0, 3, 1)}
