"""End-to-end behaviour of the credit math on a simulated population (no database).

36 hosts (12 per version: CPU SSE, CPU AVX with 1.6x the efficiency, CUDA GPU with
3-12% efficiency), identical jobs, 80 hourly rounds; statistics measured after 40.
Host 0 (CPU SSE) reports 10x its real elapsed time throughout.
"""

from __future__ import annotations

import functools
import statistics

import pytest

from apps.credit.domain import CreditPolicy
from tests.credit.simulation import CPU_AVX, CPU_SSE, GPU_CUDA, SimReport, simulate, spread

RUNS = {
    "seed": {"policy": CreditPolicy(), "replicated": False, "absurd_rounds": (50, 60)},
    "seed_replicated": {"policy": CreditPolicy(), "replicated": True},
    "seed_scale_probation": {"policy": CreditPolicy(host_scale_check=True), "replicated": False},
    "boinc_replicated": {"policy": CreditPolicy.boinc(), "replicated": True},
    "boinc": {"policy": CreditPolicy.boinc(), "replicated": False, "absurd_rounds": (50, 60)},
}


@functools.cache
def run(name: str) -> SimReport:
    return simulate(**RUNS[name])


def honest_ids(report: SimReport) -> list[int]:
    return [h.id for h in report.hosts if h.inflate == 1.0]


@pytest.mark.parametrize("name", list(RUNS))
def test_mean_credit_per_job_is_the_same_for_every_version(name):
    report = run(name)
    means = [report.mean(report.version_hosts(v)) for v in (CPU_SSE, CPU_AVX, GPU_CUDA)]
    assert spread(means) < 0.10


@pytest.mark.parametrize("name", list(RUNS))
def test_mean_credit_per_job_is_the_same_for_every_host(name):
    report = run(name)
    assert spread([report.mean([i]) for i in honest_ids(report)]) < 0.10


@pytest.mark.parametrize("name", list(RUNS))
def test_host_inflating_elapsed_time_tenfold_gains_under_10_percent(name):
    report = run(name)
    peers = report.mean(report.version_hosts(CPU_SSE))
    assert report.mean([0]) / peers - 1 < 0.10


def test_the_cheater_did_inflate_its_peak_flop_count():
    report = run("seed")
    peers = statistics.fmean(h.hav.pfc.avg for h in report.hosts if h.version == CPU_SSE and h.id != 0)
    assert report.hosts[0].hav.pfc.avg > 5 * peers


def test_host_that_starts_cheating_gains_under_10_percent_once_its_average_settles():
    # Cheating from round 40 on; the host average (weight 0.01) settles in a few hundred jobs.
    report = simulate(
        policy=CreditPolicy(), replicated=False, per_version=6, cheat_from=40, rounds=560, warmup=460
    )
    peers = report.mean(report.version_hosts(CPU_SSE))
    assert report.mean([0]) / peers - 1 < 0.10


@pytest.mark.parametrize("name", ["seed", "boinc"])
def test_one_time_absurd_claims_get_the_default_credit(name):
    # Round 50: PFC 1e304; round 60: twice fpops_bound.
    cheats = run(name).one_time_cheats
    assert len(cheats) == 2
    assert all(granted == default for granted, default in cheats)


def test_absurd_claims_leave_the_hosts_later_credit_in_line():
    report = run("seed")
    absurd = 12 + 1  # the second CPU AVX host
    peers = report.mean([i for i in report.version_hosts(CPU_AVX) if i != absurd])
    assert abs(report.mean([absurd]) / peers - 1) < 0.10


def test_runtime_estimates_come_within_10_percent_of_elapsed_time():
    assert statistics.median(run("seed").runtime_error) < 0.10
