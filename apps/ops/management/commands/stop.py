"""BOINC's bin/stop: pause a project's daemons and stop its scheduler (or only the daemons named)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from apps.ops.management.commands.start import add_project_arguments, run_set


class Command(BaseCommand):
    help = (
        "Stop a project (BOINC's bin/stop): the scheduler answers 'project is down' and the periodic "
        "daemons skip it; with --daemon, only those daemons are paused."
    )

    def add_arguments(self, parser: Any) -> None:
        add_project_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        run_set(self, opts, run=False)
