"""The work-fetch design's Examples 1-3 as acceptance tests, judged against each client policy.

The design states its targets for its own policy, ``v6-gpu``, which meets all three with the
readings documented in apps/emulator/domain/policies/v6_gpu.py. Measured (docs/emulator.md's table):

- Example 1: v6-gpu and rec give B the whole CPU and A 75% of the GPU, so A and B get equal
  processing; v4 knows nothing of GPUs and leaves the GPU idle, so A gets nothing. Read
  literally, per resource, the work-fetch design's debt-eligibility rule splits the GPU 50/50 instead
  (``test_literal_eligibility_example1_misses_the_target``).
- Example 2: v6-gpu pays B back for a whole year; rec pays back only until the 10-day REC
  half-life has forgotten A's year, then splits 50/50; v4, with no deadline mode, misses
  A's deadline. In the variation B and the new project C share the CPU evenly, under
  v6-gpu from C's first day.
- Example 3: v6-gpu shares the GPU 50/50 at once; rec first lets B catch up on the GPU for
  about ten days. In the variant where B ran CPU jobs all year, v6-gpu's debts owe B the
  first year's processing difference and pay it back.
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain import SimulationReport, load_scenario, run_scenario
from apps.emulator.domain.model import DAY
from apps.emulator.domain.policies import V6GpuPolicy

SHARE_TOLERANCE = 0.05
"""Allowed absolute error on a measured share (a fraction of a resource's capacity).

Three things move a measured share away from its long-run target: job and time-slice
granularity (jobs of 1-24 hours, slices of 1-4 hours: under 1% of a 10-30 day window);
start-up transients (buffers filling, per-resource backoffs doubling for a day or two
before a project without work for a resource stops being asked, a new app being found
only when its one-day backoff ends); and debt paying back up to a day of one project's
excess (3.3% of a 30-day window). 0.05 covers all three with room, and is still far
smaller than the gaps between the outcomes being told apart (0.25 between 75/25 and 50/50).
"""

CPU = ProcType.CPU
GPU = ProcType.NVIDIA
YEAR = 365 * DAY


@cache
def _run(scenario: str, policy: str) -> SimulationReport:
    # Deterministic, so sharing one run between the tests of a module is safe.
    return run_scenario(load_scenario(scenario), policy)


@cache
def _run_literal(scenario: str) -> SimulationReport:
    return run_scenario(load_scenario(scenario), V6GpuPolicy(literal_eligibility=True))


def _example1(policy: str) -> SimulationReport:
    return _run("example1_gpu_sharing", policy)


def _processing_fraction(report: SimulationReport, project: str) -> float:
    total = sum(report.processing(p) for p in report.projects)
    return report.processing(project) / total


# -- Example 1: A GPU-only, B CPU+GPU, GPU twice the CPU, equal shares ------------------


@pytest.mark.parametrize("policy", ["v6-gpu", "rec"])
def test_example1_cpu_all_to_b(policy: str) -> None:
    assert _example1(policy).share("B", CPU) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


@pytest.mark.parametrize("policy", ["v6-gpu", "rec"])
def test_example1_gpu_75_percent_to_a(policy: str) -> None:
    assert _example1(policy).share("A", GPU) == pytest.approx(0.75, abs=SHARE_TOLERANCE)


@pytest.mark.parametrize("policy", ["v6-gpu", "rec"])
def test_example1_gpu_25_percent_to_b(policy: str) -> None:
    assert _example1(policy).share("B", GPU) == pytest.approx(0.25, abs=SHARE_TOLERANCE)


@pytest.mark.parametrize("policy", ["v6-gpu", "rec"])
def test_example1_equal_total_processing(policy: str) -> None:
    assert _processing_fraction(_example1(policy), "A") == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_v4_example1_gpu_stays_idle() -> None:
    assert _example1("v4").idle(GPU) == 1.0


def test_v4_example1_gpu_only_project_gets_nothing() -> None:
    assert _example1("v4").processing("A") == 0.0


def test_v4_example1_cpu_all_to_b() -> None:
    assert _example1("v4").share("B", CPU) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


def test_example1_v4_idles_two_thirds_of_the_host_and_the_gpu_policies_none() -> None:
    idle = {policy: _example1(policy).figures.idle_fraction for policy in ("v4", "v6-gpu", "rec")}
    assert idle == pytest.approx({"v4": 2 / 3, "v6-gpu": 0.0, "rec": 0.0}, abs=0.01)


def test_literal_eligibility_example1_misses_the_target() -> None:
    """The work-fetch design's debt-eligibility rule read per resource splits the GPU 50/50 (A 50.8%).

    A has no CPU app, so its CPU backoff reaches the one-day maximum within two days and it
    stops being CPU-debt-eligible. B is then the only CPU-eligible project and its CPU debt
    cannot move (it is owed all it uses; the zero-sum offset cancels any change), so the
    overall debt ranks A and B by GPU debt alone, and any lasting GPU split other than 50/50
    would widen the GPU debt gap without bound. v6-gpu therefore reads the rule as applying
    to projects with no job on the host (module docstring, reading (a)).
    """
    report = _run_literal("example1_gpu_sharing")
    assert report.share("A", GPU) == pytest.approx(0.5, abs=SHARE_TOLERANCE)


# -- Example 2: A's one-year no-slack job, then B ------------------------------------


def test_v6_gpu_example2_a_runs_its_year_in_high_priority() -> None:
    report = _run("example2_high_priority", "v6-gpu")
    assert report.share("A", CPU, start=0, end=YEAR) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


def test_v6_gpu_example2_a_meets_its_deadline() -> None:
    assert _run("example2_high_priority", "v6-gpu").n_jobs_missed == 0


def test_v6_gpu_example2_b_gets_the_cpu_for_a_year() -> None:
    report = _run("example2_high_priority", "v6-gpu")
    assert report.share("B", CPU, start=YEAR, end=2 * YEAR) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


def test_rec_example2_b_is_paid_back_at_first() -> None:
    report = _run("example2_high_priority", "rec")
    assert report.share("B", CPU, start=YEAR, end=YEAR + 5 * DAY) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


def test_rec_example2_forgets_the_year_after_a_few_half_lives() -> None:
    """Today's client misses Example 2's goal on purpose: REC forgets with a 10-day half-life."""
    report = _run("example2_high_priority", "rec")
    share = report.share("B", CPU, start=YEAR + 35 * DAY, end=2 * YEAR)
    assert share == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_v4_example2_a_misses_its_deadline() -> None:
    assert _run("example2_high_priority", "v4").n_jobs_missed == 1


@pytest.mark.parametrize("policy", ["v6-gpu", "rec"])
def test_example2_new_project_shares_cpu_evenly_with_b(policy: str) -> None:
    report = _run("example2_new_project", policy)
    b = report.share("B", CPU, start=YEAR, end=YEAR + 30 * DAY)
    c = report.share("C", CPU, start=YEAR, end=YEAR + 30 * DAY)
    assert c / (b + c) == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_v6_gpu_example2_new_project_shares_cpu_from_its_first_day() -> None:
    """The variation's "immediately": B and C split the CPU 50/50 on C's first day.

    B, owed a year by A, sat at the one-day short-term-debt clamp; once A's job ends B is
    alone with work and back at mean zero, where C joins it. (rec does not meet this: its
    hysteresis fetches C's first job only when B's day-long job is nearly done, so C has 10%
    of that first day, as in BOINC's own client emulator.)
    """
    report = _run("example2_new_project", "v6-gpu")
    shares = (
        report.share("B", CPU, start=YEAR, end=YEAR + DAY),
        report.share("C", CPU, start=YEAR, end=YEAR + DAY),
    )
    assert shares == pytest.approx((0.5, 0.5), abs=SHARE_TOLERANCE)


# -- Example 3: B gets a GPU app after a year -----------------------------------------


def test_v6_gpu_example3_gpu_shared_evenly_at_once() -> None:
    report = _run("example3_new_gpu_app", "v6-gpu")
    share = report.share("A", GPU, start=YEAR, end=YEAR + 10 * DAY)
    assert share == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_v6_gpu_example3_stays_even() -> None:
    report = _run("example3_new_gpu_app", "v6-gpu")
    share = report.share("A", GPU, start=YEAR + 10 * DAY, end=YEAR + 30 * DAY)
    assert share == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_rec_example3_b_catches_up_on_the_gpu_first() -> None:
    """Today's client misses "immediately 50/50": B's REC is lower, so B has the GPU first.

    B finds its new app at its next request for any resource (its backoffs, up to a day and
    a half, decide when), then has the GPU alone for about nine days, until its REC reaches
    A's, as in BOINC's own client emulator.
    """
    report = _run("example3_new_gpu_app", "rec")
    assert report.share("B", GPU, start=YEAR + DAY, end=YEAR + 5 * DAY) > 0.75


def test_rec_example3_settles_at_an_even_split() -> None:
    report = _run("example3_new_gpu_app", "rec")
    share = report.share("A", GPU, start=YEAR + 10 * DAY, end=YEAR + 30 * DAY)
    assert share == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_v6_gpu_example3_with_cpu_work_pays_b_back() -> None:
    """Not the design's goal for Example 3, and stated plainly: with CPU work B is owed a year.

    In the variant B ran CPU jobs all year while A used the twice-faster GPU. B, having
    work, was debt-eligible on the GPU (reading (a)), so it is owed the first year's
    processing difference and has the GPU to itself for about half a year (A: 0% of the GPU
    over the next 150 days). This is Example 1's equal-processing rule applied to the first
    year; the literal per-resource reading splits 50/50 at once but fails Example 1.
    """
    report = _run("example3_with_cpu_work", "v6-gpu")
    assert report.share("A", GPU, start=YEAR, end=YEAR + 150 * DAY) < SHARE_TOLERANCE


def test_literal_eligibility_example3_with_cpu_work_shares_evenly_at_once() -> None:
    report = _run_literal("example3_with_cpu_work")
    share = report.share("A", GPU, start=YEAR, end=YEAR + 30 * DAY)
    assert share == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_rec_example3_with_cpu_work_settles_at_example1_split() -> None:
    report = _run("example3_with_cpu_work", "rec")
    share = report.share("A", GPU, start=YEAR + 10 * DAY, end=YEAR + 60 * DAY)
    assert share == pytest.approx(0.75, abs=SHARE_TOLERANCE)


@pytest.mark.slow
def test_a_run_is_the_same_under_any_string_hash_seed() -> None:
    """run_scenario promises repeatable runs; iterating a set of enum members (ordered by
    string hash, which changes per interpreter) once made rec's Example 3 differ."""
    code = (
        "from apps.emulator.domain import load_scenario, run_scenario;"
        "r = run_scenario(load_scenario('example3_new_gpu_app'), 'rec');"
        "print(r.figures)"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout
        for seed in ("0", "2")
    }
    assert len(outputs) == 1
