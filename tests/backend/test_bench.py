"""bench_pipeline's embedded run: a throwaway SQLite database, every workunit assimilated."""

from __future__ import annotations

import pytest

from apps.work.management.commands.bench_pipeline import run_embedded


@pytest.mark.slow
def test_embedded_benchmark_takes_every_workunit_through_the_pipeline():
    outcome = run_embedded(jobs=10, hosts=2)
    assert outcome["jobs"] == 10
    assert outcome["rate"] > 0
    assert outcome["schema"] in ("migrations", "models (migrations lag behind)")
