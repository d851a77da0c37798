"""Restore a backup made by ``backup`` into an empty database and data directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.ops.backup import BackupError, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup directory into the database DATABASE_URL names (new and empty: before migrate) "
        "and an empty COBBLESTONE_DATA_DIR; checks every file's checksum first."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("backup", type=Path, help="The directory backup wrote")
        parser.add_argument(
            "--no-data", action="store_true", help="Database only; leave the data directory alone"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            outcome = backup_restore(
                source=opts["backup"], include_data=not opts["no_data"], write=self.stderr.write
            )
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Restored {', '.join(outcome.projects) or 'no projects'}.")
        if outcome.pending_migrations:
            self.stdout.write(
                f"{outcome.pending_migrations} migration(s) of this code are newer than the backup: run migrate."
            )
