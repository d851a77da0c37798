"""BOINC's update_versions, as one command: copy, sign and register an app version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.applications.management.commands.add_app import project_by_slug
from apps.applications.services import AppError, AppFileSpec, app_version_add


class Command(BaseCommand):
    help = (
        "Add an app version: add_app_version --project SLUG --appname NAME --version_num N "
        "--platform PLATFORM [--plan_class CLASS] --file MAIN [--file OTHER ...]"
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--appname", required=True)
        parser.add_argument("--version_num", type=int, required=True)
        parser.add_argument("--platform", required=True)
        parser.add_argument("--plan_class", default="")
        parser.add_argument("--file", action="append", required=True, help="First is the main program")
        parser.add_argument(
            "--signature",
            action="append",
            default=[],
            help="Offline signature file for the --file at the same position (projects without a server key)",
        )
        parser.add_argument("--api_version", default="")
        parser.add_argument("--cmdline", default="")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = project_by_slug(opts["project"])
        signatures = [Path(p).read_text() if Path(p).is_file() else "" for p in opts["signature"]]
        missing_sig = [p for p in opts["signature"] if not Path(p).is_file()]
        if missing_sig:
            raise CommandError(f"signature file not found: {missing_sig[0]}")
        files = [
            AppFileSpec(path=Path(p), signature=signatures[i] if i < len(signatures) else "")
            for i, p in enumerate(opts["file"])
        ]
        try:
            version = app_version_add(
                project=project,
                app_name=opts["appname"],
                version_num=opts["version_num"],
                platform_name=opts["platform"],
                plan_class=opts["plan_class"],
                files=files,
                api_version=opts["api_version"],
                cmdline=opts["cmdline"],
            )
        except AppError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Added {version} ({version.proc_type}, {version.files.count()} file(s), signed)"
            )
        )
