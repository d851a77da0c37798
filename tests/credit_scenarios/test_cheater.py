"""One host that reports 100 times its elapsed time (within the FLOP bound) among honest CPU
and GPU hosts: with the project's default cheat bounds it gains only on its own first jobs and
moves nobody else's credit, among 4 CPU + 4 GPU hosts as among 12 + 8. Figures: docs/credit.md
and docs/failure-paths.md."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import transaction
from django.test import override_settings

from apps.projects.services import project_create
from tests.credit_scenarios.cheater import Figures, run, setup

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@dataclass(frozen=True)
class Fleet:
    n_cpu: int
    n_gpu: int
    rounds: int
    settled: int  # the round from which every average, the cheater's included, has settled
    cpu_efficiency: tuple[float, float] = (0.25, 0.6)
    cheater_joins: int = 0
    cheater_jobs: int = 1


FLEETS = {
    # 12 CPU + 8 GPU hosts, the cheater among them from the start.
    "large": Fleet(12, 8, rounds=45, settled=25),
    # 4 + 4, the cheater joining once the others' averages have settled (25 rounds bring the CPU
    # version above its 100 samples), as one job or ten between two feeder passes.
    "small": Fleet(4, 4, rounds=75, settled=50, cpu_efficiency=(0.3, 0.7), cheater_joins=30),
    "small_busy": Fleet(
        4, 4, rounds=75, settled=50, cpu_efficiency=(0.3, 0.7), cheater_joins=30, cheater_jobs=10
    ),
}
SEED_BOUNDS = {  # the design read literally: X = 100 for app versions, no median, no claim cap
    "credit_version_sample_cap": 100,
    "credit_version_median": False,
    "credit_claim_cap": 0,
}


def _run(slug: str, fleet: Fleet, *, cheater: bool, now, bounds: dict | None = None) -> Figures:
    project = project_create(slug=slug, name=slug).project
    for name, value in (bounds or {}).items():
        setattr(project, name, value)
    project.save()
    app, hosts = setup(
        project,
        n_cpu=fleet.n_cpu,
        n_gpu=fleet.n_gpu,
        cheater=cheater,
        cpu_efficiency=fleet.cpu_efficiency,
        cheater_joins=fleet.cheater_joins,
        cheater_jobs=fleet.cheater_jobs,
    )
    return run(project, app, hosts, rounds=fleet.rounds, start=now)


@pytest.fixture(scope="module")
def runs(django_db_setup, django_db_blocker, tmp_path_factory):
    from datetime import UTC, datetime

    now = datetime(2026, 3, 1, tzinfo=UTC)
    data_dir = tmp_path_factory.mktemp("cheater") / "data"
    with django_db_blocker.unblock(), override_settings(COBBLESTONE_DATA_DIR=data_dir), transaction.atomic():
        figures = {}
        for name, fleet in FLEETS.items():
            figures[name, "honest"] = _run(f"{name}-honest", fleet, cheater=False, now=now)
            figures[name, "cheater"] = _run(f"{name}-cheater", fleet, cheater=True, now=now)
        large = FLEETS["large"]
        figures["seed", "honest"] = _run("seed-honest", large, cheater=False, now=now, bounds=SEED_BOUNDS)
        figures["seed", "cheater"] = _run("seed-cheater", large, cheater=True, now=now, bounds=SEED_BOUNDS)
        transaction.set_rollback(True)
    return figures


def _host_changes(runs: dict, fleet: str) -> list[float]:
    """Each honest host's change of credit per job, once settled, that the cheater brings."""
    before, after = runs[fleet, "honest"], runs[fleet, "cheater"]
    since = FLEETS["large" if fleet == "seed" else fleet].settled
    pairs = [
        *zip(before.honest_cpu, after.honest_cpu, strict=True),
        *zip(before.honest_gpu, after.honest_gpu, strict=True),
    ]
    return [after.mean([a], since) / before.mean([b], since) - 1 for b, a in pairs]


@pytest.mark.parametrize("fleet", ["large", "small", "small_busy"])
def test_every_honest_hosts_credit_per_job_is_unchanged_by_the_cheater(runs, fleet):
    assert max(abs(change) for change in _host_changes(runs, fleet)) < 0.10


def test_the_cheaters_first_jobs_gain_at_most_the_claim_cap(runs):
    f = runs["large", "cheater"]
    honest = f.mean(f.honest_cpu, FLEETS["large"].settled)
    assert max(c for _, c in f.credit[f.cheater]) < 10.5 * honest  # Project.credit_claim_cap, default 10


@pytest.mark.parametrize("fleet", ["large", "small", "small_busy"])
def test_once_its_average_settles_the_cheater_gets_what_honest_hosts_get(runs, fleet):
    f, since = runs[fleet, "cheater"], FLEETS[fleet].settled
    assert abs(f.mean([f.cheater], since) / f.mean(f.honest_cpu, since) - 1) < 0.10


def test_with_the_seeds_literal_bounds_one_cheater_multiplies_everyones_credit(runs):
    assert min(_host_changes(runs, "seed")) > 2.0
