"""handle_trickles: one pass of the trickle handlers over a project's unhandled trickle-ups."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.core import clock
from apps.projects.models import Project
from apps.trickles.services import trickles_handle_pending


class Command(BaseCommand):
    help = (
        "Run the trickle handlers once over a project's unhandled trickle-ups (BOINC's "
        "trickle_handler --one_pass): handle_trickles --project SLUG [--variety V]"
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--variety", default="")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r}")
        counts = trickles_handle_pending(project=project, now=clock.now(), variety=opts["variety"])
        summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "nothing to handle"
        self.stdout.write(self.style.SUCCESS(f"Trickle-ups: {summary}."))
