"""Helpers of the tests that run work in threads against PostgreSQL (each thread has its own
connection, closed when it ends)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.db import connection, connections


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """Start ``target`` in a thread; the list collects what it raised, for the test to check."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def waiting_on_a_lock() -> bool:
    """Whether some session of the test database waits for a lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


def wait_for(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
