"""BOINC's make_project: create a project, its key pairs and its download/upload areas."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.projects.services import ProjectError, project_create


class Command(BaseCommand):
    help = "Create a project: make_project SLUG --name 'Long name'"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--offline-code-signing",
            action="store_true",
            help="Print the code-signing private key once and do not store it (sign apps offline).",
        )
        parser.add_argument("--locality-scheduling", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            created = project_create(
                slug=opts["slug"],
                name=opts["name"],
                description=opts["description"],
                keep_private_key=not opts["offline_code_signing"],
                locality_scheduling=opts["locality_scheduling"],
            )
        except ProjectError as exc:
            raise CommandError(str(exc)) from exc
        project = created.project
        self.stdout.write(self.style.SUCCESS(f"Created project {project.slug!r}: {project.name}"))
        self.stdout.write(f"  master URL:    {project.master_url}")
        self.stdout.write(f"  scheduler URL: {project.scheduler_url}")
        self.stdout.write(f"  data:          {project.data_dir}")
        if opts["offline_code_signing"]:
            self.stdout.write("Code-signing PRIVATE key (store it offline; it is not kept on the server):")
            self.stdout.write(created.code_sign_private_key)
