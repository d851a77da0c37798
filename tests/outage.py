"""A database that cannot be reached, for the tests of what clients see during an outage.

The default connection is pointed at a place where no database answers (a PostgreSQL port
nothing listens on, an SQLite file in a directory that does not exist) and closed, so the
next query raises what a stopped server raises: Django's OperationalError on connecting.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from apps.benchmarks.scheduler import free_port


@contextmanager
def database_unreachable() -> Iterator[None]:
    """Within the block, every new connection to the default database is refused."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-cobblestone-dir/db.sqlite3"
    else:
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(free_port()))  # nothing listens
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
