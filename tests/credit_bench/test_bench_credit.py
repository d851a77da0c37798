"""bench_credit with tiny numbers on a throwaway SQLite database: the table and the consistency line."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.slow
def test_bench_credit_prints_the_table_and_every_credit_adds_up():
    out = StringIO()
    call_command("bench_credit", hosts=50, validations=40, quorum=2, database="sqlite", stdout=out)
    lines = out.getvalue().splitlines()

    assert lines[0].split() == ["setup", "database", "hosts", "what", "seconds", "per", "second"]
    rows = lines[1:5]
    assert [r.split()[:4] for r in rows] == [["quorum", "2", "SQLite", "50"]] * 4
    assert "feeder pass (median of 5)" in rows[1]
    assert "validate 40 WUs" in rows[3]
    assert all(float(r.split()[-1]) > 0 for r in rows)  # per second
    assert lines[5].startswith("seconds per 10,000 validations: ")
    assert lines[6].startswith("consistency: OK: 80/80 results granted credit > 0, 0 not valid")
    assert "mismatched totals: 0 accounts, 0 teams, 0 hosts" in lines[6]
