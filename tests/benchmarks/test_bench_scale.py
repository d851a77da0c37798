"""bench_scale end to end at a tiny scale: every page answers and every run has figures."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from tests.conftest import require_service

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def table() -> str:
    require_service("COBBLESTONE_TEST_DATABASE_URL", "PostgreSQL")
    out = StringIO()
    call_command(
        "bench_scale",
        scale=0.0001,
        samples=1,
        rpc_seconds=1,
        rpc_jobs=1000,
        pipeline_jobs=20,
        stdout=out,
        stderr=StringIO(),
    )
    return out.getvalue()


def _rows(table: str, heading: str) -> list[tuple[str, list[str]]]:
    """(label, figures) of the lines under the ``-- heading`` line, up to the next heading."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"-- {heading}"))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith(("-- ", "peak memory")):
            break
        rows.append((line[:44].strip(), line[44:].split()))
    return rows


def test_no_page_fails(table):
    statuses = [
        int(figures[0]) for heading in ("volunteer", "admin", "api") for _, figures in _rows(table, heading)
    ]
    assert len(statuses) > 50
    assert set(statuses) <= {200, 302}  # 302: a list page past the end of a tiny table


def test_scheduler_sends_jobs_in_every_database(table):
    rows = _rows(table, "scheduler RPCs")
    assert [label for label, _ in rows] == [
        "empty database",
        "this database",
        "this database, db_dump running",
    ]
    assert all(float(figures[1]) > 0 for _, figures in rows)  # jobs per second


def test_pipeline_finishes_in_both_databases(table):
    rows = _rows(table, "bench_pipeline")
    assert [label for label, _ in rows] == ["empty database", "this database"]
    assert all(float(figures[0]) > 0 for _, figures in rows)  # workunits per second
