"""The ``rec`` policy reproduces BOINC's own client emulator (BCE) within 3 points.

The figures are BCE's, measured with ``manage.py compare_bce`` (docs/emulator.md has the
whole table, windows that do not agree included): each project's share of a resource, in
percent, over whole days. "scaled" runs shorten the scenarios' year-long first phase to
20 days (``apps.benchmarks.bce.shorten_year``). BCE itself is not needed here.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from functools import cache

import pytest

from apps.benchmarks.bce import shorten_year
from apps.core.domain.resources import ProcType
from apps.emulator.domain import SimulationReport, load_scenario, run_scenario
from apps.emulator.domain.model import DAY, Scenario

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
    ("example3_new_gpu_app", False, 375, 395, "A", GPU, 49.2),
    ("example3_new_gpu_app", True, 20, 30, "A", GPU, 13.3),
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
    """B is asked for GPU work along with its CPU request even while its GPU backoff runs, so
    it may learn of its app on the day the app appears (BCE over 120 seeds: B has 38.1% of
    that day's GPU, 0 to 100% in single runs)."""
    share = _run("example3_new_gpu_app", True).share("B", GPU, start=20 * DAY, end=21 * DAY)
    assert share > 0.5


# BCE's mean over its random seeds 1-8 for Example 3 at full size, where one run's first day
# depends on when B's backoffs happen to end: (first day, last day, A's GPU share in percent).
EXAMPLE3_MEAN_OF_8_SEEDS = [(365, 366, 66.7), (365, 375, 7.9), (375, 380, 42.5), (375, 395, 48.1)]


def _seeded_runs(scenario: Scenario, n: int) -> tuple[SimulationReport, ...]:
    """``n`` runs of the scenario with seeds counted up from its own, as ``compare_bce --seeds``."""
    return tuple(run_scenario(replace(scenario, seed=scenario.seed + k), "rec") for k in range(n))


def _gpu_shares(runs: tuple[SimulationReport, ...], first: int, last: int) -> list[float]:
    return [r.share("A", GPU, start=first * DAY, end=last * DAY) * 100 for r in runs]


@cache
def _example3_runs() -> tuple[SimulationReport, ...]:
    return _seeded_runs(load_scenario("example3_new_gpu_app"), 8)


@pytest.mark.slow
@pytest.mark.parametrize(("first", "last", "bce"), EXAMPLE3_MEAN_OF_8_SEEDS)
def test_rec_mean_over_seeds_matches_bce_after_the_new_gpu_app(first: int, last: int, bce: float) -> None:
    assert statistics.fmean(_gpu_shares(_example3_runs(), first, last)) == pytest.approx(bce, abs=POINTS)


# BCE's mean and standard deviation over its random seeds 1-120 for Example 3 scaled:
# (first day, last day, A's GPU share in percent, its spread over the runs).
SCALED_EXAMPLE3_SEEDS = 120
SCALED_EXAMPLE3_BCE = [(20, 21, 61.9, 28.1), (20, 30, 12.7, 1.8), (30, 35, 49.9, 0.4), (30, 50, 50.0, 0.1)]


@cache
def _scaled_example3_runs() -> tuple[SimulationReport, ...]:
    return _seeded_runs(shorten_year(load_scenario("example3_new_gpu_app"), 20), SCALED_EXAMPLE3_SEEDS)


@pytest.mark.slow
@pytest.mark.parametrize(("first", "last", "bce", "spread"), SCALED_EXAMPLE3_BCE)
def test_rec_mean_over_as_many_seeds_as_bce_matches_it_scaled(
    first: int, last: int, bce: float, spread: float
) -> None:
    """Within 3 points, or twice the standard error of the difference of two 120-run means
    where that is larger: one run's first-day share spreads over 0-100% (7.3 points there;
    measured: 1.5 apart)."""
    sampling = 2 * math.sqrt(2 * spread**2 / SCALED_EXAMPLE3_SEEDS)
    mean = statistics.fmean(_gpu_shares(_scaled_example3_runs(), first, last))
    assert mean == pytest.approx(bce, abs=max(POINTS, sampling))
