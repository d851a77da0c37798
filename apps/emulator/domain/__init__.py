"""The client emulator's pure core: scenarios, the three client policies, the simulation.

Entry points::

    scenario = load_scenario("example1_gpu_sharing")   # bundled name, path or YAML/JSON text
    report = run_scenario(scenario, "v6-gpu")            # or "v4", "rec"; days= overrides
    print(format_report_table(report))
    svg = render_share_chart(report)
"""

from __future__ import annotations

from apps.emulator.domain.chart import render_comparison_chart, render_share_chart
from apps.emulator.domain.figures import FiguresOfMerit, ProjectResourceUsage, SimulationReport, UsageBucket
from apps.emulator.domain.model import PolicyName, Scenario
from apps.emulator.domain.report import format_comparison_table, format_report_table, report_summary
from apps.emulator.domain.scenario import ScenarioError, bundled_scenarios, load_scenario
from apps.emulator.domain.simulation import run_scenario

__all__ = [
    "FiguresOfMerit",
    "PolicyName",
    "ProjectResourceUsage",
    "Scenario",
    "ScenarioError",
    "SimulationReport",
    "UsageBucket",
    "bundled_scenarios",
    "format_comparison_table",
    "format_report_table",
    "load_scenario",
    "render_comparison_chart",
    "render_share_chart",
    "report_summary",
    "run_scenario",
]
