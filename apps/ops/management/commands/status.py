"""BOINC's bin/status: each project's scheduler and daemons, and the Celery workers answering.

Exit status 1 when a daemon that is not paused has not run within three of its periods, or
no Celery worker answers (what a cron job or a monitoring check looks at).
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand
from django.utils.timesince import timesince

from apps.core import clock
from apps.ops.daemons import celery_workers_answering, project_run_status
from apps.ops.management.commands.start import projects_named


class Command(BaseCommand):
    help = (
        "Show each project's scheduler and daemons (BOINC's bin/status); exit 1 if something is not running."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", action="append", metavar="SLUG", help="This project (repeatable)")

    def handle(self, *args: Any, **opts: Any) -> None:
        now = clock.now()
        healthy = True
        for project in projects_named(opts["project"]):
            status = project_run_status(project=project, now=now)
            healthy &= status.healthy
            self.stdout.write(f"{project.slug} ({project.name}): scheduler {status.scheduler}")
            self.stdout.write(f"  {'daemon':<20}{'state':<14}{'last run':<18}{'items':>8}{'errors':>8}")
            for d in status.daemons:
                last = f"{timesince(d.last_run, now)} ago" if d.last_run else "never"
                self.stdout.write(f"  {d.name:<20}{d.state:<14}{last:<18}{d.items:>8}{d.errors:>8}")
        workers = celery_workers_answering()
        if workers:
            self.stdout.write(f"Celery workers answering: {', '.join(workers)}")
        else:
            healthy = False
            self.stdout.write("Celery workers answering: none (the daemons' passes are not running)")
        if not healthy:
            sys.exit(1)
