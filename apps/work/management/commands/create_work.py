"""BOINC's create_work: create workunits (and their first results) from templates and files.

Apps built on work add options from their AppConfig.ready()
(apps.work.management.create_work_extensions): the sequences app adds ``--sequence``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.applications.models import App
from apps.core.progress import Progress
from apps.projects.models import Project
from apps.work.domain.assignments import TARGET_OPTIONS, target_from_options
from apps.work.management.create_work_extensions import create_work_extensions
from apps.work.services import JobSpec, RemoteFile, WorkError, workunits_create
from apps.work.services.templates import job_from_templates, load_input_template, load_output_template

FLOAT_OPTS = ("rsc_fpops_est", "rsc_fpops_bound", "rsc_memory_bound", "rsc_disk_bound", "delay_bound")
INT_OPTS = (
    "min_quorum",
    "target_nresults",
    "max_error_results",
    "max_total_results",
    "max_success_results",
    "priority",
    "batch",
)


def add_job_options(parser: argparse.ArgumentParser) -> None:
    """The per-job options BOINC's create_work takes (also valid on each --stdin line)."""
    parser.add_argument("--wu_name")
    parser.add_argument("--command_line")
    for opt in FLOAT_OPTS:
        parser.add_argument(f"--{opt}", type=float)
    for opt in INT_OPTS:
        parser.add_argument(f"--{opt}", type=int)
    targets = parser.add_argument_group("targeted and broadcast jobs (at most one)")
    for opt in TARGET_OPTIONS:
        targets.add_argument(f"--{opt}", type=int, metavar="ID")
    targets.add_argument("--broadcast", action="store_true", default=None, help="one result for every host")
    parser.set_defaults(inputs=[])
    parser.add_argument(
        "--remote_file",
        nargs=3,
        metavar=("URL", "NBYTES", "MD5"),
        action=_Inputs,
        help="an input hosts download from URL (never copied here); in order among the input files",
    )
    parser.add_argument(
        "infiles", nargs="*", action=_Inputs, help="input files, in the input template's order"
    )


class _Inputs(argparse.Action):
    """Input files and --remote_file inputs into one list, in command-line order, as BOINC's
    create_work reads them."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        inputs = list(namespace.inputs)
        if option_string is None:
            inputs += [Path(value) for value in values]
        else:
            try:
                inputs.append(_remote_file(*values))
            except ValueError as exc:
                raise argparse.ArgumentError(self, str(exc)) from None
        namespace.inputs = inputs


def _remote_file(url: str, nbytes: str, md5: str) -> RemoteFile:
    try:
        size = float(nbytes)
    except ValueError:
        raise ValueError(f"NBYTES {nbytes!r} is not a number") from None
    if not size.is_integer():
        raise ValueError(f"NBYTES {nbytes!r} is not a whole number")
    return RemoteFile(url=url, md5=md5.lower(), nbytes=int(size))


def job_options(ns: argparse.Namespace) -> dict[str, object]:
    options: dict[str, object] = {k: getattr(ns, k) for k in (*FLOAT_OPTS, *INT_OPTS)}
    options["name"] = ns.wu_name
    options["command_line"] = ns.command_line
    for key, value in options.items():
        if isinstance(value, int | float) and (value != value or value < 0):
            raise CommandError(f"--{key} must be a non-negative number")
    try:
        options["target"] = target_from_options(vars(ns))
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    return options


class Command(BaseCommand):
    help = (
        "Create jobs: create_work --project SLUG --appname NAME [--wu_name NAME] [--wu_template F] "
        "[--result_template F] [--rsc_fpops_est X ...] [--target_host ID | --target_user ID | "
        "--target_team ID | --broadcast | --broadcast_user ID | --broadcast_team ID] [--stdin] "
        "[--remote_file URL NBYTES MD5 ...] [INPUT_FILE ...] "
        "[the options the apps built on work add, listed below]"
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--appname", required=True)
        parser.add_argument("--wu_template", type=Path)
        parser.add_argument("--result_template", type=Path)
        parser.add_argument(
            "--stdin", action="store_true", help="one job per line: per-job options and files"
        )
        add_job_options(parser)
        for extension in create_work_extensions():
            extension.add_arguments(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        project, app = self.project_and_app(opts)
        extension = next((e for e in create_work_extensions() if e.wanted(opts)), None)
        if extension is not None:
            try:
                done = extension.create(project, app, opts)
            except WorkError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(self.style.SUCCESS(done))
            return
        try:
            in_t = load_input_template(opts["wu_template"]) if opts["wu_template"] else None
            out_t = load_output_template(opts["result_template"]) if opts["result_template"] else None
            defaults = job_options(argparse.Namespace(**opts))
            jobs = (
                self._stdin_jobs(in_t, out_t, defaults)
                if opts["stdin"]
                else [self._job(in_t, out_t, opts["inputs"], defaults)]
            )
            progress = Progress("creating workunits", total=len(jobs), write=self.stderr.write)
            created = workunits_create(project=project, app=app, jobs=jobs, progress=progress.advance)
            if len(jobs) > 1:
                progress.finish()
        except WorkError as exc:
            raise CommandError(str(exc)) from exc
        for wu in created[:5]:
            self.stdout.write(f"created workunit {wu.name}")
        self.stdout.write(self.style.SUCCESS(f"Created {len(created)} workunit(s)."))

    def project_and_app(self, opts: dict[str, Any]) -> tuple[Project, App]:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r}")
        app = App.objects.filter(project=project, name=opts["appname"]).first()
        if app is None:
            raise CommandError(f"no app named {opts['appname']!r} in project {project.slug}")
        return project, app

    def _job(
        self, in_t: Any, out_t: Any, infiles: list[Path | RemoteFile], options: dict[str, object]
    ) -> JobSpec:
        return job_from_templates(
            input_template=in_t, output_template=out_t, infiles=infiles, options=options
        )

    def _stdin_jobs(self, in_t: Any, out_t: Any, defaults: dict[str, object]) -> list[JobSpec]:
        parser = argparse.ArgumentParser(prog="create_work --stdin line", exit_on_error=False, add_help=False)
        add_job_options(parser)
        jobs = []
        reading = Progress("reading job lines", write=self.stderr.write)
        for lineno, line in enumerate(sys.stdin, start=1):
            reading.advance()
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                ns = parser.parse_args(shlex.split(line))
            except (argparse.ArgumentError, ValueError, SystemExit) as exc:
                raise CommandError(f"stdin line {lineno}: {exc}") from exc
            options = {**defaults, **{k: v for k, v in job_options(ns).items() if v is not None}}
            jobs.append(self._job(in_t, out_t, ns.inputs, options))
        if not jobs:
            raise CommandError("--stdin given but no job lines were read")
        return jobs
