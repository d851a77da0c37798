"""Create the living demo project (used by `make run` on first start)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from apps.core import clock
from apps.portal.demo.seed import demo_exists, demo_seed


class Command(BaseCommand):
    help = "Create the demo project with apps, hosts, volunteers and work in every state."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--if-empty", action="store_true", help="Do nothing if the demo project exists")

    def handle(self, *args: Any, **opts: Any) -> None:
        if demo_exists():
            if opts["if_empty"]:
                self.stdout.write("Demo project already present.")
                return
            self.stderr.write("The demo project already exists; nothing done.")
            return
        with tempfile.TemporaryDirectory() as scratch:
            project = demo_seed(now=clock.now(), scratch=Path(scratch))
        self.stdout.write(self.style.SUCCESS(f"Demo project ready: {project.master_url}"))
