"""Work sequences in ``create_work``: ``--sequence NAME`` creates a sequence whose
first step reads the input files instead of one workunit per job.

SequencesConfig.ready() adds these options to work's command (CREATE_WORK_SEQUENCE);
without ``--sequence`` the command makes plain workunits.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from django.core.management.base import CommandError

from apps.applications.models import App
from apps.projects.models import Project
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.management.commands import create_work
from apps.work.management.create_work_extensions import CreateWorkExtension
from apps.work.services import OutputSpec, WorkError
from apps.work.services.templates import job_from_templates, load_input_template, load_output_template


def sequence_wanted(opts: dict[str, Any]) -> bool:
    return bool(opts["sequence"])


def sequence_from_options(project: Project, app: App, opts: dict[str, Any]) -> str:
    """A work sequence; the input files are step 0's (the initial state)."""
    if opts["stdin"]:
        raise CommandError("--sequence creates one sequence; it cannot be combined with --stdin")
    if opts["max_result_time"] is None:
        raise CommandError("--sequence needs --max_result_time (seconds of real time per result)")
    try:
        job = job_from_templates(
            input_template=load_input_template(opts["wu_template"]) if opts["wu_template"] else None,
            output_template=load_output_template(opts["result_template"])
            if opts["result_template"]
            else None,
            infiles=opts["inputs"],
            options=create_work.job_options(argparse.Namespace(**opts)),
        )
        spec = SequenceSpec(
            name=opts["sequence"],
            job=replace(job, name="", inputs=(), outputs=state_outputs(job.outputs, opts["state_output"])),
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
    return f"Created sequence {seq.name} ({kind}; {n} step(s) so far)."


def add_sequence_options(parser: argparse.ArgumentParser) -> None:
    """The options of work sequences (see docs/sequences.md)."""
    group = parser.add_argument_group("work sequences")
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


CREATE_WORK_SEQUENCE = CreateWorkExtension(
    name="sequence", add_arguments=add_sequence_options, wanted=sequence_wanted, create=sequence_from_options
)
