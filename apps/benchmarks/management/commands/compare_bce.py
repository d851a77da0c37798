"""Run BOINC's own client emulator (BCE) and the ``rec`` policy side by side.

    python manage.py compare_bce --boinc-src /path/to/boinc
    python manage.py compare_bce --boinc-src /path/to/boinc --scenario example3_new_gpu_app --size scaled

Builds BCE from the BOINC checkout with the comparison patch (daily usage per project and
resource, apps held back until a given time; see apps/benchmarks/bce.py), writes its inputs
for each emulator scenario, runs both, and prints each project's share of each resource
over windows of one day and longer with the difference in percentage points. ``full`` runs
the scenario as written; ``scaled`` shortens its year-long first phase (``--year-days``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.benchmarks import bce
from apps.emulator.domain import bundled_scenarios, load_scenario, run_scenario

SCENARIOS = [
    "example1_gpu_sharing",
    "two_projects_cpu_only",
    "example2_high_priority",
    "example2_new_project",
    "example3_new_gpu_app",
]


class Command(BaseCommand):
    help = "Compare the emulator's rec policy with BOINC's client emulator built from source."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--boinc-src", required=True, help="a BOINC source checkout")
        parser.add_argument("--work-dir", default="var/bce", help="build and run directory")
        parser.add_argument("--scenario", action="append", help=f"default: {', '.join(SCENARIOS)}")
        parser.add_argument("--size", choices=["full", "scaled", "both"], default="both")
        parser.add_argument("--year-days", type=int, default=20, help="the first phase's length when scaled")
        parser.add_argument("--delta", type=float, default=60.0, help="BCE's time step in seconds")
        parser.add_argument(
            "--seeds",
            type=int,
            default=1,
            help="run each side this many times with different random seeds; show the mean and spread",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        names = opts["scenario"] or SCENARIOS
        unknown = [n for n in names if n not in bundled_scenarios() and not Path(n).is_file()]
        if unknown:
            raise CommandError(f"unknown scenario: {', '.join(unknown)}")
        if opts["year_days"] < 1:
            raise CommandError("--year-days must be at least 1")
        if opts["seeds"] < 1:
            raise CommandError("--seeds must be at least 1")
        work = Path(opts["work_dir"]).resolve()
        try:
            binary = bce.build_bce(Path(opts["boinc_src"]).resolve(), work / "build")
        except bce.BceError as exc:
            raise CommandError(str(exc)) from exc
        sizes = ["full", "scaled"] if opts["size"] == "both" else [opts["size"]]
        for name in names:
            for size in sizes:
                scenario = load_scenario(name)
                year = bce.YEAR_DAYS
                if size == "scaled":
                    scenario = bce.shorten_year(scenario, opts["year_days"])
                    year = opts["year_days"]
                started = time.perf_counter()
                bce_runs, rec_runs = [], []
                for k in range(opts["seeds"]):
                    run_dir = work / f"{scenario.name}-{size}" / f"seed{k + 1}"
                    try:
                        bce_runs.append(bce.run_bce(binary, scenario, run_dir, opts["delta"], seed=k + 1))
                    except bce.BceError as exc:
                        raise CommandError(str(exc)) from exc
                    seeded = replace(scenario, seed=scenario.seed + k)
                    rec_runs.append(bce.report_usage(run_scenario(seeded, "rec"), seeded))
                rows = bce.compare(scenario, bce_runs, rec_runs, year)
                runs = (
                    f", mean ± standard deviation of {opts['seeds']} seeds each" if opts["seeds"] > 1 else ""
                )
                self.stdout.write(f"\n{scenario.name} ({size}, {bce.days(scenario)} days{runs})\n")
                self.stdout.write(bce.format_rows(rows) + "\n")
                self.stderr.write(f"{scenario.name} {size}: {time.perf_counter() - started:.1f} s")
