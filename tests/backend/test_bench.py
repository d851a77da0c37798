"""bench_pipeline's embedded run: a throwaway SQLite database, every workunit assimilated, and
the cost of each stage of a job's life metered."""

from __future__ import annotations

import pytest

from apps.benchmarks.management.commands.bench_pipeline import run_embedded, stage_costs

# What every quorum-2 workunit goes through, so each must have cost something.
LIFE = (
    "scheduler RPC: reports",
    "scheduler RPC: dispatch",
    "upload handler",
    "transitioner",
    "validator",
    "assimilator",
    "file deleter",
    "db_purge",
)


@pytest.mark.slow
def test_embedded_benchmark_takes_every_workunit_through_the_pipeline():
    outcome = run_embedded(jobs=10, hosts=2)
    assert outcome["jobs"] == 10
    assert outcome["rate"] > 0
    assert outcome["schema"] in ("migrations", "models (migrations lag behind)")
    costs = {label: (ms, statements) for label, ms, statements in stage_costs(outcome["stages"], 10)}
    assert [label for label in LIFE if costs[label][1] <= 0] == []
    assert costs["all stages"][0] <= 1000 * outcome["cpu"] / 10
