"""migrate_locked: the container's web role migrates once, whoever else starts with it."""

from __future__ import annotations

import threading
from io import StringIO

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection, connections

from apps.ops.management.commands.migrate_locked import MIGRATE_LOCK_KEY

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_migrated_database_is_left_as_it_is():
    out = StringIO()
    call_command("migrate_locked", "--wait", "0", stdout=out)
    assert "No migrations to apply." in out.getvalue()


def test_an_unreachable_database_is_an_error_after_the_wait(monkeypatch):
    def refuse() -> None:
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "ensure_connection", refuse)
    with pytest.raises(CommandError, match="the database did not answer within 0 s: connection refused"):
        call_command("migrate_locked", "--wait", "0")


def migrate_in_thread(out: StringIO) -> None:
    try:
        call_command("migrate_locked", stdout=out)
    finally:
        connections.close_all()  # this thread's own connection, or the test database cannot be dropped


@pytest.mark.postgres
def test_a_second_caller_waits_for_the_first_to_finish():
    if connection.vendor != "postgresql":
        pytest.skip("the lock is PostgreSQL's (SQLite serialises writers itself)")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("prepare_threshold", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
        out = StringIO()
        waiting = threading.Thread(target=migrate_in_thread, args=(out,))
        waiting.start()
        waiting.join(timeout=2)
        assert waiting.is_alive()
        other.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])
        waiting.join(timeout=30)
    assert not waiting.is_alive()
    assert "No migrations to apply." in out.getvalue()
