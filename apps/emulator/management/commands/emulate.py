"""Run a client-emulator scenario and print its figures; optionally write the SVG chart.

    python manage.py emulate example1_gpu_sharing --policy all --chart out.svg
    python manage.py emulate path/to/scenario.yaml --policy v6-gpu --days 30

SCENARIO is a bundled name (apps/emulator/scenarios/*.yaml) or a YAML/JSON file. With
``--policy all`` the three policies run side by side: one comparison table with the five
figures of merit, then each policy's own table, and one chart with a panel set per policy.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.emulator.domain import (
    PolicyName,
    ScenarioError,
    bundled_scenarios,
    format_comparison_table,
    format_report_table,
    load_scenario,
    render_comparison_chart,
    run_scenario,
)


class Command(BaseCommand):
    help = "Run a client-emulator scenario under one or all client policies."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "scenario", help=f"bundled: {', '.join(bundled_scenarios())}; or a YAML/JSON file"
        )
        parser.add_argument("--policy", default="all", choices=[*(p.value for p in PolicyName), "all"])
        parser.add_argument("--days", type=float, default=None, help="override the scenario's duration")
        parser.add_argument("--chart", default="", help="write the SVG chart to this file")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            scenario = load_scenario(opts["scenario"])
        except (ScenarioError, OSError) as exc:
            raise CommandError(f"cannot load scenario {opts['scenario']!r}: {exc}") from exc
        if opts["days"] is not None and opts["days"] <= 0:
            raise CommandError("--days must be positive")
        policies = list(PolicyName) if opts["policy"] == "all" else [PolicyName(opts["policy"])]
        reports = []
        for policy in policies:
            started = time.perf_counter()
            reports.append(run_scenario(scenario, policy, days=opts["days"]))
            self.stderr.write(f"{policy.value}: {time.perf_counter() - started:.2f} s")
        if len(reports) > 1:
            self.stdout.write(f"Scenario {scenario.name}: the policies side by side\n")
            self.stdout.write(format_comparison_table(reports) + "\n")
        for report in reports:
            self.stdout.write("\n" + format_report_table(report) + "\n")
        if opts["chart"]:
            path = Path(opts["chart"])
            path.write_text(render_comparison_chart(reports), encoding="utf-8")
            self.stdout.write(f"Chart written to {path}")
