"""BOINC's bin/start: resume a project's daemons and scheduler (or only the daemons named)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.ops.daemons import UnknownDaemon, projects_run_set
from apps.projects.models import Project


def add_project_arguments(parser: Any) -> None:
    parser.add_argument(
        "--project", action="append", metavar="SLUG", help="This project (repeatable; default: all)"
    )
    parser.add_argument(
        "--daemon", action="append", metavar="NAME", default=[], help="Only this daemon (repeatable)"
    )


def projects_named(slugs: list[str] | None) -> list[Project]:
    if not slugs:
        return list(Project.objects.order_by("slug"))
    projects = list(Project.objects.filter(slug__in=slugs).order_by("slug"))
    missing = sorted(set(slugs) - {p.slug for p in projects})
    if missing:
        raise CommandError(f"no project {', '.join(missing)}")
    return projects


def run_set(command: BaseCommand, opts: dict[str, Any], *, run: bool) -> None:
    projects = projects_named(opts["project"])
    try:
        projects_run_set(projects=projects, daemons=opts["daemon"], run=run)
    except UnknownDaemon as exc:
        raise CommandError(str(exc)) from exc
    verb = "started" if run else "stopped"
    what = ", ".join(opts["daemon"]) if opts["daemon"] else "scheduler and daemons"
    for project in projects:
        command.stdout.write(f"{project.slug}: {what} {verb}")


class Command(BaseCommand):
    help = "Start a project (BOINC's bin/start): its scheduler and periodic daemons, or only --daemon ones."

    def add_arguments(self, parser: Any) -> None:
        add_project_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        run_set(self, opts, run=True)
