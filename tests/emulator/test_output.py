from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from dataclasses import replace
from functools import cache

import pytest

from apps.benchmarks.emulator_speed import benchmark_seconds_per_day
from apps.emulator.domain import (
    SimulationReport,
    format_comparison_table,
    format_report_table,
    load_scenario,
    render_share_chart,
    run_scenario,
)

SVG = "{http://www.w3.org/2000/svg}"


@cache
def _report(policy: str = "rec") -> SimulationReport:
    return run_scenario(load_scenario("example1_gpu_sharing"), policy, days=3)


def test_chart_is_svg() -> None:
    assert ET.fromstring(render_share_chart(_report())).tag == f"{SVG}svg"


def test_chart_has_a_band_per_project_and_resource_used() -> None:
    root = ET.fromstring(render_share_chart(_report()))
    # A on the GPU; B on the CPU and the GPU.
    assert len(root.findall(f"{SVG}polygon")) == 3


def test_chart_escapes_project_names() -> None:
    scenario = replace(load_scenario("example1_gpu_sharing"), name="<A&B>")
    svg = render_share_chart(run_scenario(scenario, "rec", days=0.5))
    assert "&lt;A&amp;B&gt;" in svg


def test_table_lists_each_project() -> None:
    lines = format_report_table(_report()).splitlines()
    assert [line.split()[0] for line in lines[4:6]] == ["A", "B"]


def test_table_shows_shares_as_percentages() -> None:
    assert format_report_table(_report()).splitlines()[5].split()[1] == "100.0%"


def test_comparison_table_has_a_row_per_policy() -> None:
    table = format_comparison_table([_report("v4"), _report("rec")])
    assert [line.split()[0] for line in table.splitlines()[2:]] == ["v4", "rec"]


def test_benchmark_divides_best_run_by_days() -> None:
    ticks = itertools.chain([0.0, 3.0, 10.0, 11.0])
    result = benchmark_seconds_per_day(days=0.25, repeat=2, timer=lambda: next(ticks))
    assert result == 4.0


@pytest.mark.parametrize("policy", ["v4", "v6-gpu", "rec"])
def test_the_benchmark_runs_a_simulated_day_of_each_policy(policy: str) -> None:
    # How fast is for the `emulate` command's figures (docs/benchmarks.md); a timed assertion here
    # failed on a loaded machine.
    assert benchmark_seconds_per_day(policy=policy, repeat=1) > 0.0
