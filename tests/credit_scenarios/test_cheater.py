"""One host that reports 100 times its elapsed time (within the FLOP bound) among honest CPU
and GPU hosts: with the project's default cheat bounds it gains only on its own first jobs and
moves nobody else's credit (seed 003 "Cheat prevention"). Figures: docs/failure-paths.md."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import override_settings

from apps.projects.services import project_create
from tests.credit_scenarios.cheater import Figures, run, setup

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

N_CPU, N_GPU, ROUNDS = 12, 8, 45
SETTLED = 25  # rounds after which every average is above its sample threshold
SEED_BOUNDS = {  # seed 003 read literally: X = 100 for app versions, no median, no claim cap
    "credit_version_sample_cap": 100,
    "credit_version_median": False,
    "credit_claim_cap": 0,
}


def _run(slug: str, *, cheater: bool, now, bounds: dict | None = None) -> Figures:
    project = project_create(slug=slug, name=slug).project
    for name, value in (bounds or {}).items():
        setattr(project, name, value)
    project.save()
    app, hosts = setup(project, n_cpu=N_CPU, n_gpu=N_GPU, cheater=cheater)
    return run(project, app, hosts, rounds=ROUNDS, start=now)


@pytest.fixture(scope="module")
def runs(django_db_setup, django_db_blocker, tmp_path_factory):
    from datetime import UTC, datetime

    now = datetime(2026, 3, 1, tzinfo=UTC)
    data_dir = tmp_path_factory.mktemp("cheater") / "data"
    with django_db_blocker.unblock(), override_settings(COBBLESTONE_DATA_DIR=data_dir), transaction.atomic():
        figures = {
            "honest": _run("honest", cheater=False, now=now),
            "cheater": _run("cheater", cheater=True, now=now),
            "seed_honest": _run("seedhonest", cheater=False, now=now, bounds=SEED_BOUNDS),
            "seed_cheater": _run("seedcheater", cheater=True, now=now, bounds=SEED_BOUNDS),
        }
        transaction.set_rollback(True)
    return figures


def _change(runs: dict[str, Figures], baseline: str, other: str, group: str) -> float:
    before, after = runs[baseline], runs[other]
    return after.mean(getattr(after, group), SETTLED) / before.mean(getattr(before, group), SETTLED) - 1


@pytest.mark.parametrize("group", ["honest_cpu", "honest_gpu"])
def test_honest_credit_per_job_is_unchanged_by_the_cheater(runs, group):
    assert abs(_change(runs, "honest", "cheater", group)) < 0.10


def test_the_cheaters_first_jobs_gain_at_most_the_claim_cap(runs):
    f = runs["cheater"]
    honest = f.mean(f.honest_cpu, SETTLED)
    assert max(f.credit[f.cheater]) < 10.5 * honest  # Project.credit_claim_cap, default 10


def test_once_its_average_settles_the_cheater_gets_what_honest_hosts_get(runs):
    f = runs["cheater"]
    assert abs(f.mean([f.cheater], SETTLED) / f.mean(f.honest_cpu, SETTLED) - 1) < 0.10


@pytest.mark.parametrize("group", ["honest_cpu", "honest_gpu"])
def test_with_the_seeds_literal_bounds_one_cheater_multiplies_everyones_credit(runs, group):
    assert _change(runs, "seed_honest", "seed_cheater", group) > 2.0
