"""The ``rec`` policy reproduces BOINC's own client emulator (BCE) within 3 points.

The figures are BCE's, measured with ``manage.py compare_bce`` (docs/emulator.md has the
whole table, windows that do not agree included): each project's share of a resource, in
percent, over whole days. "scaled" runs shorten the scenarios' year-long first phase to
20 days (``apps.benchmarks.bce.shorten_year``). BCE itself is not needed here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pytest

from apps.benchmarks.bce import shorten_year
from apps.core.domain.resources import ProcType
from apps.emulator.domain import SimulationReport, load_scenario, run_scenario
from apps.emulator.domain.model import DAY

POINTS = 3.0
CPU = ProcType.CPU
GPU = ProcType.NVIDIA

# (scenario, scaled, first day, last day, project, resource, BCE's share in percent)
BCE_FIGURES = [
    ("example1_gpu_sharing", False, 0, 1, "A", GPU, 74.7),
    ("example1_gpu_sharing", False, 0, 10, "A", GPU, 74.6),
    ("example1_gpu_sharing", False, 10, 15, "A", GPU, 75.0),
    ("example1_gpu_sharing", False, 10, 30, "A", GPU, 75.0),
    ("example1_gpu_sharing", False, 0, 30, "B", CPU, 99.0),
    ("two_projects_cpu_only", False, 0, 1, "A", CPU, 50.0),
    ("two_projects_cpu_only", False, 0, 10, "A", CPU, 50.0),
    ("two_projects_cpu_only", False, 10, 30, "A", CPU, 50.0),
    ("example2_high_priority", False, 0, 365, "A", CPU, 100.0),
    ("example2_high_priority", False, 365, 366, "B", CPU, 100.0),
    ("example2_high_priority", False, 365, 375, "B", CPU, 91.0),
    ("example2_high_priority", False, 375, 380, "B", CPU, 60.0),
    ("example2_high_priority", False, 375, 395, "B", CPU, 54.0),
    ("example2_high_priority", False, 395, 730, "B", CPU, 49.9),
    ("example2_high_priority", True, 20, 21, "B", CPU, 100.0),
    ("example2_high_priority", True, 20, 30, "B", CPU, 89.0),
    ("example2_high_priority", True, 30, 35, "B", CPU, 44.0),
    ("example2_high_priority", True, 30, 50, "B", CPU, 50.0),
    ("example2_high_priority", True, 50, 385, "B", CPU, 49.9),
    ("example2_new_project", False, 365, 366, "C", CPU, 9.9),
    ("example2_new_project", False, 365, 375, "C", CPU, 48.5),
    ("example2_new_project", False, 375, 380, "C", CPU, 45.0),
    ("example2_new_project", False, 375, 395, "C", CPU, 36.2),
    ("example2_new_project", True, 20, 21, "C", CPU, 9.9),
    ("example2_new_project", True, 20, 30, "C", CPU, 48.5),
    ("example2_new_project", True, 30, 35, "C", CPU, 43.0),
    ("example2_new_project", True, 30, 50, "C", CPU, 35.7),
    ("example3_new_gpu_app", False, 0, 365, "A", GPU, 100.0),
    ("example3_new_gpu_app", False, 375, 395, "A", GPU, 45.8),
    ("example3_new_gpu_app", True, 20, 30, "A", GPU, 10.0),
    ("example3_new_gpu_app", True, 30, 35, "A", GPU, 50.0),
    ("example3_new_gpu_app", True, 30, 50, "A", GPU, 50.0),
]


@cache
def _run(scenario: str, scaled: bool) -> SimulationReport:
    loaded = load_scenario(scenario)
    return run_scenario(shorten_year(loaded, 20) if scaled else loaded, "rec")


@pytest.mark.parametrize(("scenario", "scaled", "first", "last", "project", "proc", "bce"), BCE_FIGURES)
def test_rec_share_matches_bce(
    scenario: str, scaled: bool, first: int, last: int, project: str, proc: ProcType, bce: float
) -> None:
    share = _run(scenario, scaled).share(project, proc, start=first * DAY, end=last * DAY)
    assert share * 100 == pytest.approx(bce, abs=POINTS)


def test_scaled_example3_b_learns_of_its_gpu_app_within_its_first_day() -> None:
    """BCE: B has 83% of the GPU on the day its app appears; B is asked for GPU work along
    with its CPU request even while its GPU backoff runs."""
    share = _run("example3_new_gpu_app", True).share("B", GPU, start=20 * DAY, end=21 * DAY)
    assert share > 0.5


# BCE's mean over its random seeds 1-8 for Example 3 at full size, where one run's first day
# depends on when B's backoffs happen to end: (first day, last day, A's GPU share in percent).
EXAMPLE3_MEAN_OF_8_SEEDS = [(365, 366, 66.7), (365, 375, 7.9), (375, 380, 42.5), (375, 395, 48.1)]


@cache
def _example3_runs() -> tuple[SimulationReport, ...]:
    scenario = load_scenario("example3_new_gpu_app")
    return tuple(run_scenario(replace(scenario, seed=scenario.seed + k), "rec") for k in range(8))


@pytest.mark.parametrize(("first", "last", "bce"), EXAMPLE3_MEAN_OF_8_SEEDS)
def test_rec_mean_over_seeds_matches_bce_after_the_new_gpu_app(first: int, last: int, bce: float) -> None:
    runs = _example3_runs()
    mean = sum(r.share("A", GPU, start=first * DAY, end=last * DAY) for r in runs) / len(runs)
    assert mean * 100 == pytest.approx(bce, abs=POINTS)
