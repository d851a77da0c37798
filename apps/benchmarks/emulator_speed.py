"""How long one simulated day takes: the emulator's speed budget (well under a second)."""

from __future__ import annotations

import time
from collections.abc import Callable

from apps.emulator.domain.model import PolicyName, Scenario
from apps.emulator.domain.scenario import bundled_scenarios, load_scenario
from apps.emulator.domain.simulation import run_scenario

BENCHMARK_SCENARIO = "three_projects_100_jobs"  # 3 projects, 100 jobs queued, 4 CPUs + 1 GPU


def benchmark_seconds_per_day(
    scenario: Scenario | None = None,
    *,
    policy: PolicyName | str = PolicyName.REC,
    days: float = 1.0,
    repeat: int = 3,
    timer: Callable[[], float] = time.perf_counter,
) -> float:
    """Wall-clock seconds per simulated day, the best of ``repeat`` runs of ``days`` days.

    The default scenario is the bundled "3 projects, 100 queued jobs" one; ``timer`` is
    injectable so callers (and tests) control the clock.
    """
    if scenario is None:
        scenario = load_scenario(bundled_scenarios()[BENCHMARK_SCENARIO])
    best = float("inf")
    for _ in range(max(repeat, 1)):
        start = timer()
        run_scenario(scenario, policy, days=days)
        best = min(best, timer() - start)
    return best / days
