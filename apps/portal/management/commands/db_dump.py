"""BOINC's db_dump: write a project's statistics export (user.gz, host.gz, team.gz,
user_deleted.gz, host_deleted.gz, tables.xml) now, as the periodic task ``portal.stats_export`` does; recorded as a
DaemonRun "db_dump". Without --project, every project that has not paused db_dump.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.core import clock
from apps.portal.stats_export import DAEMON, stats_dir, stats_export_write
from apps.projects.models import Project
from apps.projects.services import daemon_pass_run, projects_active_for


class Command(BaseCommand):
    help = "Write the statistics export files (db_dump) of one project or of all projects."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", metavar="SLUG", help="Only this project (even if db_dump is paused)")
        parser.add_argument("--batch", type=int, default=1000, help="Rows read per query")

    def handle(self, *args: Any, **opts: Any) -> None:
        slug = opts["project"]
        if slug:
            projects = list(Project.objects.filter(slug=slug))
            if not projects:
                raise CommandError(f"no project {slug!r}")
        else:
            projects = projects_active_for(daemon=DAEMON)
        failed = 0
        for project in projects:
            outcome = daemon_pass_run(
                project=project,
                daemon=DAEMON,
                run=lambda p=project: stats_export_write(project=p, now=clock.now(), batch=opts["batch"]),  # type: ignore[misc]  # the default binds this project
            )
            failed += outcome.errors
            self.stdout.write(f"{project.slug}: {outcome.message} -> {stats_dir(project)}")
        if failed:
            raise CommandError(f"{failed} project(s) failed")
