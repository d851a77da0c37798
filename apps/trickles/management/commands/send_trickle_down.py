"""send_trickle_down: queue a message to a host's running task for its next scheduler reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.core import clock
from apps.projects.models import Project
from apps.trickles.services import TrickleError, trickle_down_create


class Command(BaseCommand):
    help = (
        "Queue a trickle-down: send_trickle_down --project SLUG --host ID --variety V --file BODY.xml "
        "[--result NAME]. Without --result it goes to the host's most recently sent task in progress."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--host", type=int, required=True)
        parser.add_argument("--variety", required=True)
        parser.add_argument("--file", required=True, help="the message's XML content")
        parser.add_argument("--result", default="", help="the task to hand it to")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r}")
        try:
            body = Path(opts["file"]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {opts['file']}: {exc}") from None
        try:
            message = trickle_down_create(
                project=project,
                host_id=opts["host"],
                variety=opts["variety"],
                body=body,
                result_name=opts["result"],
                now=clock.now(),
            )
        except TrickleError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Trickle-down {message.pk} queued for host {message.host_id}."))
