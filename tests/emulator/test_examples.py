"""Seed 000's Examples 1-3 as acceptance tests, judged against each client policy.

The seed states its targets for its own policy, ``v6-gpu``. Measured here:

- Example 1: v6-gpu gives B the whole CPU but splits the GPU about 50/50, not 75/25 (see
  ``test_v6_gpu_example1_gpu_split_is_even_not_the_seed_target``); rec meets the target;
  v4 never uses the GPU.
- Example 2: v6-gpu pays B back for a whole year; rec pays back only until the 10-day REC
  half-life has forgotten A's year, then splits 50/50. In the variation both share the CPU
  evenly between B and the new project C.
- Example 3: v6-gpu shares the GPU 50/50 at once; rec first lets B catch up on the GPU for
  a few days, then settles at Example 1's 75/25.
"""

from __future__ import annotations

from functools import cache

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.domain import SimulationReport, load_scenario, run_scenario
from apps.emulator.domain.model import DAY

SHARE_TOLERANCE = 0.05
"""Allowed absolute error on a measured share (a fraction of a resource's capacity).

Three things move a measured share away from its long-run target: job and time-slice
granularity (jobs of 1-24 hours, slices of 1-4 hours: under 1% of a 10-30 day window);
start-up transients (buffers filling, per-resource backoffs doubling for about two days
before a project without work for a resource stops being asked); and client 6.6's
short-term debt, which may pay one project back up to one day per instance (3.3% of a
30-day window). 0.05 covers all three with room, and is still far smaller than the gaps
between the outcomes being told apart (0.25 between 75/25 and 50/50).
"""

CPU = ProcType.CPU
GPU = ProcType.NVIDIA
YEAR = 365 * DAY


@cache
def _run(scenario: str, policy: str) -> SimulationReport:
    # Deterministic, so sharing one run between the tests of a module is safe.
    return run_scenario(load_scenario(scenario), policy)


def _example1(policy: str) -> SimulationReport:
    return _run("example1_gpu_sharing", policy)


# -- Example 1: A GPU-only, B CPU+GPU, GPU twice the CPU, equal shares ------------------


def test_v6_gpu_example1_cpu_all_to_b() -> None:
    assert _example1("v6-gpu").share("B", CPU) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


def test_v6_gpu_example1_gpu_split_is_even_not_the_seed_target() -> None:
    """Seed 000's own rules do not reach its 75/25 target; the GPU splits about 50/50.

    Three rules each pull towards an even split: A's CPU backoff reaches the one-day
    maximum within about two days, which (by the seed's debt-eligibility rule) drops A from
    CPU debt, so B's CPU time stops counting against it in the overall debt; whenever B is
    asked for CPU work it is also asked for GPU work ("ask for all types of work for which
    there is a shortfall"), which keeps B's GPU queue stocked; and the per-resource
    short-term debt that orders jobs splits a resource evenly between projects with jobs.
    """
    assert _example1("v6-gpu").share("A", GPU) == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_rec_example1_cpu_all_to_b() -> None:
    assert _example1("rec").share("B", CPU) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


def test_rec_example1_gpu_75_percent_to_a() -> None:
    assert _example1("rec").share("A", GPU) == pytest.approx(0.75, abs=SHARE_TOLERANCE)


def test_rec_example1_equal_total_processing() -> None:
    report = _example1("rec")
    a, b = report.processing("A"), report.processing("B")
    assert a / (a + b) == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_v4_example1_gpu_stays_idle() -> None:
    assert _example1("v4").idle(GPU) == 1.0


def test_v4_example1_gpu_only_project_gets_nothing() -> None:
    assert _example1("v4").processing("A") == 0.0


def test_v4_example1_cpu_all_to_b() -> None:
    assert _example1("v4").share("B", CPU) == pytest.approx(1.0, abs=SHARE_TOLERANCE)


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


# -- Example 3: B gets a GPU app after a year -----------------------------------------


def test_v6_gpu_example3_gpu_shared_evenly_at_once() -> None:
    report = _run("example3_new_gpu_app", "v6-gpu")
    share = report.share("A", GPU, start=YEAR, end=YEAR + 10 * DAY)
    assert share == pytest.approx(0.5, abs=SHARE_TOLERANCE)


def test_rec_example3_b_catches_up_on_the_gpu_first() -> None:
    """Today's client misses "immediately 50/50": B's REC is lower, so B has the GPU first."""
    report = _run("example3_new_gpu_app", "rec")
    assert report.share("B", GPU, start=YEAR, end=YEAR + 4 * DAY) > 0.75


def test_rec_example3_settles_at_example1_split() -> None:
    report = _run("example3_new_gpu_app", "rec")
    share = report.share("A", GPU, start=YEAR + 10 * DAY, end=YEAR + 30 * DAY)
    assert share == pytest.approx(0.75, abs=SHARE_TOLERANCE)
