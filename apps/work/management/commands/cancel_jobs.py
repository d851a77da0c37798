"""BOINC's cancel_jobs: cancel workunits by name or batch."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.projects.models import Project
from apps.work.models import Workunit
from apps.work.services import workunit_cancel, workunit_cancel_batch


class Command(BaseCommand):
    help = "Cancel jobs: cancel_jobs --project SLUG (--wu_name NAME | --batch N)"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True)
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--wu_name", action="append")
        group.add_argument("--batch", type=int)

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r}")
        if opts["batch"] is not None:
            n = workunit_cancel_batch(project_id=project.id, batch=opts["batch"])
        else:
            wus = dict(
                Workunit.objects.filter(project=project, name__in=opts["wu_name"]).values_list("name", "id")
            )
            unknown = sorted(set(opts["wu_name"]) - set(wus))
            if unknown:
                raise CommandError(f"no such workunit(s): {', '.join(unknown)}")
            n = workunit_cancel(workunit_ids=list(wus.values()))
        self.stdout.write(self.style.SUCCESS(f"Cancelled {n} workunit(s)."))
