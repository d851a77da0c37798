"""bench_import end to end at a tiny size: it builds the BOINC project, imports it into a
throw-away PostgreSQL database and prints its table.

The import runs in its own process with a commit per batch, as in production (the other
import tests run inside a test's transaction), so PostgreSQL's COPY, the id sequences moved
past the imported ids and the foreign keys checked at each commit meet a fresh database."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from tests.conftest import require_service

pytestmark = [pytest.mark.mysql, pytest.mark.slow]


def test_bench_import_prints_every_table_with_its_rows():
    server = require_service("COBBLESTONE_TEST_MYSQL_URL", "The private MariaDB server")
    postgres = require_service("COBBLESTONE_TEST_DATABASE_URL", "The private PostgreSQL server")
    out = StringIO()
    call_command(
        "bench_import", users=20, hosts=30, results=60, mysql=server, database_url=postgres, stdout=out
    )
    rows = {
        line.split()[0]: line.split()[1:] for line in out.getvalue().splitlines()[1:] if line[:1].islower()
    }
    assert rows["user"][:2] == ["20", "20"]
    assert rows["host"][:2] == ["30", "30"]
    assert rows["host_app_version"][:2] == ["30", "30"]
    assert rows["workunit"][:2] == ["30", "30"]
    assert rows["result"][:2] == ["60", "60"]
    assert "into postgresql" in out.getvalue()
