"""BOINC's add_app (xadd): create an application in a project."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.applications.management.app_options import add_app_options, app_fields
from apps.applications.services import AppError, app_create
from apps.projects.models import Project


def project_by_slug(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"no project with slug {slug!r} (see make_project)")
    return project


class Command(BaseCommand):
    help = "Create an app: add_app --project SLUG NAME [--user_friendly_name ...] [--min_quorum N ...]"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name")
        parser.add_argument("--project", required=True)
        add_app_options(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        project = project_by_slug(opts["project"])
        fields = app_fields(opts)
        try:
            app = app_create(project=project, name=opts["name"], **fields)
        except AppError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"Added app {app.name!r} to {project.slug}"))
