"""Back up the database, the data areas and the projects' keys into one directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.ops.backup import BackupError, backup_create, backup_default_dir


class Command(BaseCommand):
    help = (
        "Back up the database (pg_dump, or SQLite's backup API), every project's data area and keys "
        "into a new directory (default: COBBLESTONE_VAR_DIR/backups/cobblestone-<UTC time>)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--output", type=Path, help="A new (or empty) directory")
        parser.add_argument("--no-data", action="store_true", help="Database and keys only")

    def handle(self, *args: Any, **opts: Any) -> None:
        output = opts["output"] or backup_default_dir()
        try:
            backup_create(output=output, include_data=not opts["no_data"], write=self.stderr.write)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(str(output))
