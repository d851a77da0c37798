"""migrate, once, however many web containers start at the same time.

The container entrypoint (deploy/container/entrypoint.sh) runs this before gunicorn: it waits
for the database to answer (a stack's PostgreSQL starts alongside), takes a PostgreSQL advisory
lock so that a second caller waits instead of applying the same migrations concurrently, and then
finds nothing left to do. SQLite serialises writers itself and needs no lock.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection

# Any constant shared by every caller; chosen to be unlikely to collide with other users of
# advisory locks in the same database.
MIGRATE_LOCK_KEY = 0x436F6262  # "Cobb"


class Command(BaseCommand):
    help = "Wait for the database, then apply migrations under a lock (one caller at a time)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--wait", type=float, default=60.0, metavar="SECONDS", help="How long to wait for the database"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        database_wait(opts["wait"])
        migrate = {"interactive": False, "verbosity": opts["verbosity"], "stdout": self.stdout}
        if connection.vendor != "postgresql":
            call_command("migrate", **migrate)
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
            try:
                call_command("migrate", **migrate)
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])


def database_wait(seconds: float) -> None:
    """Return once a connection opens; CommandError after ``seconds`` of refusals."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            connection.ensure_connection()
            return
        except OperationalError as exc:
            if time.monotonic() >= deadline:
                raise CommandError(f"the database did not answer within {seconds:g} s: {exc}") from exc
            time.sleep(1.0)
