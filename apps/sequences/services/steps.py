"""Work sequences: creating step workunits, their results, and the state chain.

Each step is an ordinary workunit of the sequence's app with ``sequence``/``sequence_index``, one
replica (min_quorum = target_nresults = 1) and ``transitioner_flags`` NO_NEW_RESULTS: the
transitioner never makes results for it, this module does, in server_state INACTIVE, so that only
the sequence source of the scheduler sends them (to the assigned host, in order).

Output files are classified by ``OutputSpec.sequence_state`` (apps.sequences.domain.rules.
plan_output_files): a STATE file stays on the host (sticky) for the next step and is uploaded only
at restartable steps (a full-state checkpoint) and at the final step; every other output is a
REPORT, always uploaded. Step k+1 reads step k's state files as inputs opened as ``prev_<open
name>``: on the host that computed step k the reply declares them as that host's own files; after a
relocation the checkpoint's uploaded state is staged in the download area for the new host.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path

from apps.projects.models import Project
from apps.sequences.domain.rules import (
    MIN_AHEAD,
    OutputFileKind,
    OutputFileSpec,
    plan_output_files,
)
from apps.sequences.models import WorkSequence
from apps.work.domain.states import FileDeleteState, ServerState
from apps.work.domain.transitions import TRANSITION_FLAG_NO_NEW_RESULTS
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from apps.work.services.create import (
    INT32_MAX,
    MAX_REPLICAS,
    MAX_WORKUNIT_NAME_BYTES,
    InputSpec,
    JobSpec,
    OutputSpec,
    WorkError,
    input_file_stage,
    name_check,
    result_create,
    workunits_create,
)

logger = logging.getLogger(__name__)

STATE_INPUT_PREFIX = "prev_"  # step k+1 opens step k's state file "state" as "prev_state"
FIRST_INPUT_ORDINAL = 50  # step 0's own inputs (the initial state) come after the shared ones
CHAIN_INPUT_ORDINAL = 100  # the previous step's state files come last
# Relocation gives a step a new result, so a step needs more than one; these only stop a loop
# (max_relocations in progress.py is the real bound). Work creation's own bound.
STEP_MAX_RESULTS = MAX_REPLICAS
MAX_STEPS_PER_CALL = 10000
# Room in a workunit name for "_r<chain>_s<index>".
MAX_SEQUENCE_NAME_BYTES = MAX_WORKUNIT_NAME_BYTES - 24


def step_name(sequence_name: str, index: int) -> str:
    return f"{sequence_name}_s{index}"


def default_delay_bound(max_result_time: float) -> float:
    """A step waits behind up to MIN_AHEAD others on its host, each taking max_result_time."""
    return (MIN_AHEAD + 1) * max_result_time


def planned_outputs(
    outputs: tuple[OutputSpec, ...], *, restartable: bool, final: bool
) -> tuple[OutputSpec, ...]:
    """The outputs of one step: upload and keep-on-host decided by the domain's classification."""
    kinds = [
        OutputFileSpec(str(i), OutputFileKind.STATE if o.sequence_state else OutputFileKind.REPORT)
        for i, o in enumerate(outputs)
    ]
    plans = plan_output_files(kinds, restartable=restartable, final=final)
    return tuple(
        replace(o, upload=p.upload, sticky=p.keep_on_host) for o, p in zip(outputs, plans, strict=True)
    )


def outputs_of(wu: Workunit) -> tuple[OutputSpec, ...]:
    known = {f.name for f in fields(OutputSpec)}
    return tuple(OutputSpec(**{k: v for k, v in spec.items() if k in known}) for spec in wu.output_files)


def template_from_step(wu: Workunit) -> JobSpec:
    """The job of a new step, copied from an existing one (extension)."""
    shared = WorkunitFileRef.objects.filter(workunit=wu, ordinal__lt=FIRST_INPUT_ORDINAL).select_related(
        "file"
    )
    return JobSpec(
        inputs=tuple(
            InputSpec(name=ref.file.name, open_name=ref.open_name, copy_file=ref.copy_file) for ref in shared
        ),
        outputs=outputs_of(wu),
        command_line=wu.command_line,
        rsc_fpops_est=wu.rsc_fpops_est,
        rsc_fpops_bound=wu.rsc_fpops_bound,
        rsc_memory_bound=wu.rsc_memory_bound,
        rsc_disk_bound=wu.rsc_disk_bound,
        delay_bound=wu.delay_bound,
        priority=wu.priority,
        batch=wu.batch,
    )


def _step_job(
    head: WorkSequence, template: JobSpec, index: int, *, restartable: bool, final: bool
) -> JobSpec:
    return replace(
        template,
        name=step_name(head.name, index),
        outputs=planned_outputs(template.outputs, restartable=restartable, final=final),
        delay_bound=template.delay_bound or default_delay_bound(head.max_result_time),
        min_quorum=1,
        target_nresults=1,
        max_error_results=STEP_MAX_RESULTS,
        max_total_results=STEP_MAX_RESULTS,
        max_success_results=STEP_MAX_RESULTS,
        extra={
            **template.extra,
            "sequence_id": head.id,
            "sequence_index": index,
            "restartable": restartable,
            "transitioner_flags": TRANSITION_FLAG_NO_NEW_RESULTS,
        },
    )


def steps_append(
    *,
    head: WorkSequence,
    template: JobSpec,
    indices: tuple[int, ...],
    restartable: frozenset[int],
    final_index: int | None,
    previous: Result | None,
    now: datetime,
) -> list[tuple[Workunit, Result]]:
    """Create step workunits ``indices`` (consecutive) with one INACTIVE result each, chained by
    their state files to ``previous`` (the current result of the step before them, if any)."""
    jobs = [
        _step_job(head, template, i, restartable=i in restartable, final=i == final_index) for i in indices
    ]
    created = []
    for wu in workunits_create(project=head.project, app=head.app, jobs=jobs, now=now, create_results=False):
        result = step_result_create(wu)
        if previous is not None:
            state_inputs_link(wu, previous)
        created.append((wu, result))
        previous = result
    return created


def step_result_create(wu: Workunit) -> Result:
    """A new current result for a step: INACTIVE, named ``<wu>_<n>`` after the ones it has."""
    n = Result.objects.filter(workunit=wu).count()
    name = f"{wu.name}_{n}"
    while Result.objects.filter(project_id=wu.project_id, name=name).exists():
        n += 1
        name = f"{wu.name}_{n}"
    return result_create(workunit=wu, name=name, server_state=ServerState.INACTIVE)


def state_files(result: Result) -> list[OutputFile]:
    """The STATE output files of ``result`` (by its workunit's output classification)."""
    specs = result.workunit.output_files
    ordinals = [i for i, spec in enumerate(specs) if spec.get("sequence_state")]
    return list(OutputFile.objects.filter(result=result, ordinal__in=ordinals).order_by("ordinal"))


def state_inputs_link(wu: Workunit, source: Result) -> None:
    """Make ``wu`` read the state files of ``source`` (replacing any earlier link)."""
    WorkunitFileRef.objects.filter(workunit=wu, ordinal__gte=CHAIN_INPUT_ORDINAL).delete()
    refs = []
    for output in state_files(source):
        file, _ = InputFile.objects.get_or_create(
            project_id=wu.project_id, name=output.name, defaults={"md5_cksum": "", "nbytes": 0}
        )
        refs.append(
            WorkunitFileRef(
                workunit=wu,
                file=file,
                open_name=f"{STATE_INPUT_PREFIX}{output.open_name or output.name}",
                copy_file=output.copy_file,
                ordinal=CHAIN_INPUT_ORDINAL + output.ordinal,
            )
        )
    WorkunitFileRef.objects.bulk_create(refs)


def first_inputs_add(wu: Workunit, specs: tuple[InputSpec, ...], copied: list[Path]) -> None:
    """Step 0's own inputs (the initial state), after the shared ones.

    They are kept (no_delete) until the sequence has a checkpoint: until then a relocation
    restarts from step 0, whose workunit may have had its files deleted after it validated."""
    project = wu.project
    refs = []
    for n, spec in enumerate(specs):
        staged = input_file_stage(project=project, spec=spec, copied=copied)
        if not staged.no_delete:
            staged.no_delete = True
            staged.save(update_fields=["no_delete"])
        refs.append(
            WorkunitFileRef(
                workunit=wu,
                file=staged,
                open_name=spec.open_name or staged.name,
                copy_file=spec.copy_file,
                ordinal=FIRST_INPUT_ORDINAL + n,
            )
        )
    WorkunitFileRef.objects.bulk_create(refs)


def first_inputs_release(head: WorkSequence) -> int:
    """The sequence has its first checkpoint: step 0's own inputs may go once nothing uses them
    (the file deleter's pass over READY input files). Returns the number released."""
    file_ids = WorkunitFileRef.objects.filter(
        workunit__sequence_id=head.id,
        workunit__sequence_index=0,
        ordinal__gte=FIRST_INPUT_ORDINAL,
        ordinal__lt=CHAIN_INPUT_ORDINAL,
    ).values_list("file_id", flat=True)
    return InputFile.objects.filter(id__in=list(file_ids), no_delete=True).update(
        no_delete=False, file_delete_state=FileDeleteState.READY
    )


def uploaded_path(project: Project, name: str) -> Path | None:
    """Where the upload handler put ``name``: the upload area, flat or in a fan-out folder."""
    direct = project.upload_dir / name
    if direct.is_file():
        return direct
    return next((p for p in project.upload_dir.glob(f"*/{name}") if p.is_file()), None)


def checkpoint_stage(result: Result) -> int:
    """Keep the uploaded state files of a new checkpoint ``result`` in the download area.

    A host that restarts from the checkpoint downloads them from there. The copy is made when the
    checkpoint validates, before the file deleter may remove the upload (the validated step's
    files go once it is assimilated), and is marked no_delete until the next checkpoint releases
    it. Returns the number of files staged; a file already gone is logged (the new host's
    download would then fail and the sequence relocate again)."""
    project = result.project
    staged = 0
    for output in state_files(result):
        target = project.download_dir / output.name
        if not target.is_file():
            source = uploaded_path(project, output.name)
            if source is None:
                logger.warning(
                    "sequence checkpoint %s: state file %s is not in the upload area", result, output.name
                )
            else:
                project.download_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        md5, nbytes = output.md5_cksum, output.nbytes
        if target.is_file():
            data = target.read_bytes()
            md5, nbytes = hashlib.md5(data).hexdigest(), len(data)
            staged += 1
        InputFile.objects.update_or_create(
            project=project,
            name=output.name,
            defaults={"md5_cksum": md5, "nbytes": nbytes, "no_delete": True},
        )
    return staged


def checkpoint_release(result: Result) -> None:
    """A checkpoint superseded by a later one: its staged copy may go."""
    project = result.project
    for output in state_files(result):
        InputFile.objects.filter(project=project, name=output.name).update(no_delete=False)
        (project.download_dir / output.name).unlink(missing_ok=True)


def spec_check(name: str, max_result_time: float, restartable_every: int) -> None:
    if "__" in name:
        raise WorkError(f"invalid sequence name {name!r}: no '__'")
    # Steps are named <sequence>_s<index> (replica chains <sequence>_r<n>_s<index>).
    name_check("sequence", name, max_bytes=MAX_SEQUENCE_NAME_BYTES)
    if not max_result_time >= 1:
        raise WorkError("max_result_time must be at least one second")
    if not 0 <= restartable_every <= INT32_MAX:
        raise WorkError(f"restartable_every must be between 0 (only the last step) and {INT32_MAX}")


def steps_count_check(n: int) -> None:
    """Steps made by one call: enough for any sequence, and bounded so one call cannot
    build millions of workunits."""
    if not 1 <= n <= MAX_STEPS_PER_CALL:
        raise WorkError(f"a sequence is created or extended by 1 to {MAX_STEPS_PER_CALL} steps at a time")
