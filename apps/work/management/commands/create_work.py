"""BOINC's create_work: create workunits (and their first results) from templates and files."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.applications.models import App
from apps.core.progress import Progress
from apps.projects.models import Project
from apps.work.services import JobSpec, OutputSpec, WorkError, workunits_create
from apps.work.services.sequences import SequenceSpec, sequence_create
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
    parser.add_argument("infiles", nargs="*", help="input files, in the input template's order")


def job_options(ns: argparse.Namespace) -> dict[str, object]:
    options: dict[str, object] = {k: getattr(ns, k) for k in (*FLOAT_OPTS, *INT_OPTS)}
    options["name"] = ns.wu_name
    options["command_line"] = ns.command_line
    for key, value in options.items():
        if isinstance(value, int | float) and (value != value or value < 0):
            raise CommandError(f"--{key} must be a non-negative number")
    return options


class Command(BaseCommand):
    help = (
        "Create jobs: create_work --project SLUG --appname NAME [--wu_name NAME] [--wu_template F] "
        "[--result_template F] [--rsc_fpops_est X ...] [--stdin] [INPUT_FILE ...]; with --sequence NAME "
        "--max_result_time S [--sequence_length N] [--restartable_every K] [--state_output NAME], "
        "a work sequence whose first step reads the input files"
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
        add_sequence_options(parser)

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(slug=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project with slug {opts['project']!r}")
        app = App.objects.filter(project=project, name=opts["appname"]).first()
        if app is None:
            raise CommandError(f"no app named {opts['appname']!r} in project {project.slug}")
        if opts["sequence"]:
            self._sequence(project, app, opts)
            return
        try:
            in_t = load_input_template(opts["wu_template"]) if opts["wu_template"] else None
            out_t = load_output_template(opts["result_template"]) if opts["result_template"] else None
            defaults = job_options(argparse.Namespace(**opts))
            jobs = (
                self._stdin_jobs(in_t, out_t, defaults)
                if opts["stdin"]
                else [self._job(in_t, out_t, [Path(p) for p in opts["infiles"]], defaults)]
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

    def _job(self, in_t: Any, out_t: Any, infiles: list[Path], options: dict[str, object]) -> JobSpec:
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
            jobs.append(self._job(in_t, out_t, [Path(p) for p in ns.infiles], options))
        if not jobs:
            raise CommandError("--stdin given but no job lines were read")
        return jobs

    def _sequence(self, project: Project, app: App, opts: dict[str, Any]) -> None:
        """Seed 001: a work sequence; the input files are step 0's (the initial state)."""
        if opts["stdin"]:
            raise CommandError("--sequence creates one sequence; it cannot be combined with --stdin")
        if opts["max_result_time"] is None:
            raise CommandError("--sequence needs --max_result_time (seconds of real time per result)")
        try:
            in_t = load_input_template(opts["wu_template"]) if opts["wu_template"] else None
            out_t = load_output_template(opts["result_template"]) if opts["result_template"] else None
            job = self._job(
                in_t, out_t, [Path(p) for p in opts["infiles"]], job_options(argparse.Namespace(**opts))
            )
            spec = SequenceSpec(
                name=opts["sequence"],
                job=replace(
                    job, name="", inputs=(), outputs=state_outputs(job.outputs, opts["state_output"])
                ),
                first_inputs=job.inputs,
                max_result_time=opts["max_result_time"],
                length=opts["sequence_length"],
                initial_steps=opts["initial_steps"],
                restartable_every=opts["restartable_every"],
            )
            seq = sequence_create(project=project, app=app, spec=spec)
        except WorkError as exc:
            raise CommandError(str(exc)) from exc
        n = seq.workunits.count()
        kind = f"{opts['sequence_length']} steps" if opts["sequence_length"] else "open-ended"
        self.stdout.write(self.style.SUCCESS(f"Created sequence {seq.name} ({kind}; {n} step(s) so far)."))


def add_sequence_options(parser: argparse.ArgumentParser) -> None:
    """Seed 001's work sequences (see docs/sequences.md)."""
    group = parser.add_argument_group("work sequences (seed 001)")
    group.add_argument("--sequence", metavar="NAME", help="create a work sequence of this name")
    group.add_argument(
        "--sequence_length", type=int, metavar="N", help="number of steps; omit for an open-ended sequence"
    )
    group.add_argument(
        "--initial_steps", type=int, default=3, metavar="M", help="open-ended: steps created now (default 3)"
    )
    group.add_argument(
        "--max_result_time", type=float, metavar="S", help="seconds of real time a host may take per step"
    )
    group.add_argument(
        "--restartable_every",
        type=int,
        default=0,
        metavar="K",
        help="every K-th step uploads the full state (0: only the last)",
    )
    group.add_argument(
        "--state_output",
        action="append",
        default=[],
        metavar="OPEN_NAME",
        help="an output that is the state the next step reads (repeatable; default: the first output)",
    )


def state_outputs(outputs: tuple[OutputSpec, ...], names: list[str]) -> tuple[OutputSpec, ...]:
    """Mark the state files among the outputs; the others are reports, always uploaded."""
    unknown = set(names) - {o.open_name for o in outputs}
    if unknown:
        raise WorkError(
            f"--state_output names no output of the result template: {', '.join(sorted(unknown))}"
        )
    return tuple(
        replace(o, sequence_state=(o.open_name in names) if names else i == 0) for i, o in enumerate(outputs)
    )
