"""Move a BOINC project (its MySQL/MariaDB database and project directory) into Cobblestone.

Run it with both servers stopped; run it again to go on after an interruption or to retry
rows it refused once they are fixed in the BOINC database. See docs/import.md.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.boinc_import.services.project import BoincImportError
from apps.boinc_import.services.run import ImportSummary, boinc_import_run

PROGRESS_EVERY = 2.0  # seconds between progress lines of one table


class Command(BaseCommand):
    help = "Import a BOINC project's database and project directory into a Cobblestone project."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--project", required=True, help="Slug of the Cobblestone project (made on the first run)"
        )
        parser.add_argument(
            "--mysql", required=True, help="mysql://user:password@host:port/database of the BOINC project"
        )
        parser.add_argument("--project-dir", required=True, type=Path, help="The BOINC project directory")
        parser.add_argument("--dry-run", action="store_true", help="Read and check everything; write nothing")
        parser.add_argument("--batch-size", type=int, default=5000, help="Rows per batch and transaction")

    def handle(self, *args: Any, **opts: Any) -> None:
        last_line: dict[str, float] = {}

        def progress(table: str, done: int, total: int) -> None:
            now = time.monotonic()
            # A table's first line at once, so the operator sees each table begin.
            if table not in last_line or done >= total or now - last_line[table] >= PROGRESS_EVERY:
                last_line[table] = now
                self.stdout.write(f"  {table:<18}{done:>12,} of {total:,}")

        try:
            summary = boinc_import_run(
                slug=opts["project"],
                mysql_url=opts["mysql"],
                project_dir=opts["project_dir"],
                dry_run=opts["dry_run"],
                batch_size=opts["batch_size"],
                progress=progress,
            )
        except BoincImportError as exc:
            raise CommandError(str(exc)) from None
        self._report(summary, verbosity=opts["verbosity"])

    def _report(self, summary: ImportSummary, *, verbosity: int) -> None:
        self.stdout.write("")
        self.stdout.write(
            f"{'table':<18}{'read':>11}{'imported':>11}{'refused':>9}{'changed':>9}{'seconds':>9}{'rows/s':>10}"
        )
        for s in summary.tables:
            self.stdout.write(
                f"{s.table:<18}{s.read:>11,}{s.imported:>11,}{s.refused:>9,}{s.changed:>9,}"
                f"{s.seconds:>9.1f}{s.rows_per_second:>10,.0f}"
            )
        self.stdout.write(f"total {summary.seconds:.1f} s")
        for warning in summary.warnings:
            self.stdout.write(f"warning: {warning}")
        refused = [i for i in summary.issues if i.refused]
        changed = [i for i in summary.issues if not i.refused]
        for issue in refused:
            key = f"/{issue.source_key}" if issue.source_key else ""
            self.stdout.write(f"refused {issue.table} {issue.source_id}{key}: {issue.reason}")
        if verbosity >= 2:
            for issue in changed:
                self.stdout.write(f"changed {issue.table} {issue.source_id}: {issue.reason}")
        elif changed:
            self.stdout.write(f"{len(changed)} rows imported with a change (-v 2 lists them)")
        if summary.dry_run:
            self.stdout.write("Dry run: nothing was written.")
        else:
            self.stdout.write(f"Project {summary.project.slug}: {summary.project.master_url}")
