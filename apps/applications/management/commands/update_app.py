"""BOINC's update_app: change an existing application's settings."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.applications.management.app_options import add_app_options, app_fields
from apps.applications.management.commands.add_app import project_by_slug
from apps.applications.models import App
from apps.applications.services import AppError, app_update


class Command(BaseCommand):
    help = "Change an app's settings: update_app --project SLUG NAME [--min_quorum N ...]"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name")
        parser.add_argument("--project", required=True)
        add_app_options(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        project = project_by_slug(opts["project"])
        app = App.objects.filter(project=project, name=opts["name"]).first()
        if app is None:
            raise CommandError(f"no app {opts['name']!r} in project {project.slug}")
        fields = {k: v for k, v in app_fields(opts).items() if v is not None}
        if not fields:
            raise CommandError("nothing to change: give at least one setting")
        try:
            app_update(app=app, **fields)
        except AppError as exc:
            raise CommandError(str(exc)) from exc
        changed = ", ".join(f"{k}={v}" for k, v in fields.items())
        self.stdout.write(self.style.SUCCESS(f"Updated app {app.name!r} in {project.slug}: {changed}"))
