"""Creating and extending work sequences: a project creates one with create_work (or the admin,
or the API) and may extend it later (docs/sequences.md).

``sequence_create`` makes the head record and the first steps, one INACTIVE result each. A
fixed-length sequence (``length``) gets all its steps at once and its last step uploads the final
state; an open-ended one gets ``initial_steps`` and grows through ``sequence_extend`` (the app's
hook, the admin or the API). With the app's ``sequence_redundancy`` on, the same steps are created
for ``replicas`` chains (replica_check.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from django.db import IntegrityError, transaction

from apps.applications.models import App
from apps.core import clock
from apps.projects.models import Project
from apps.sequences.domain.rules import SequenceSnapshot, extend_plan
from apps.sequences.models import WorkSequence
from apps.sequences.services.replica_check import group_ids
from apps.sequences.services.rows import Chain, chain_load, head_get
from apps.sequences.services.steps import (
    first_inputs_add,
    spec_check,
    steps_append,
    steps_count_check,
    template_from_step,
)
from apps.work.domain.states import SequenceState
from apps.work.services.create import MAX_REPLICAS, InputSpec, JobSpec, WorkError, input_file_stage

DEFAULT_INITIAL_STEPS = 3  # the folding example: "only creates 2 or 3 results in each sequence"


@dataclass(frozen=True, slots=True)
class SequenceSpec:
    """A sequence to create. ``job`` is every step's template: its outputs (``sequence_state``
    marks the state files), estimates, bounds and command line; ``job.inputs`` go to every step
    and ``first_inputs`` (the initial state) to step 0 only. ``length`` None: open-ended."""

    name: str
    job: JobSpec
    max_result_time: float
    length: int | None = None
    initial_steps: int = DEFAULT_INITIAL_STEPS
    restartable_every: int = 0
    first_inputs: tuple[InputSpec, ...] = ()
    replicas: int | None = None  # chains with sequence_redundancy; default max(app.min_quorum, 2)


def sequence_create(
    *, project: Project, app: App, spec: SequenceSpec, now: datetime | None = None
) -> WorkSequence:
    """Create the sequence (and its replica chains), its first steps and their results."""
    now = now or clock.now()
    spec_check(spec.name, spec.max_result_time, spec.restartable_every)
    if spec.job.delay_bound is not None and spec.job.delay_bound < spec.max_result_time:
        # A host that qualifies (a step within max_result_time) would still miss its deadline.
        raise WorkError("a step's delay_bound must be at least the sequence's max_result_time")
    if app.project_id != project.id:
        raise WorkError(f"app {app.name!r} does not belong to project {project.slug}")
    n_first = spec.length if spec.length is not None else spec.initial_steps
    steps_count_check(n_first)
    n_chains = (spec.replicas or max(app.min_quorum, 2)) if app.sequence_redundancy else 1
    if not 1 <= n_chains <= MAX_REPLICAS:
        raise WorkError(f"a sequence has 1 to {MAX_REPLICAS} replica chains")
    copied: list[Path] = []
    try:
        with transaction.atomic():
            shared = tuple(
                InputSpec(name=staged.name, open_name=s.open_name or staged.name, copy_file=s.copy_file)
                for s, staged in (
                    (s, input_file_stage(project=project, spec=s, copied=copied)) for s in spec.job.inputs
                )
            )
            template = replace(spec.job, inputs=shared)
            primary = None
            for chain_no in range(n_chains):
                name = spec.name if chain_no == 0 else f"{spec.name}_r{chain_no}"
                head = WorkSequence.objects.create(
                    project=project,
                    app=app,
                    name=name,
                    max_result_time=spec.max_result_time,
                    restartable_every=spec.restartable_every,
                    expected_length=spec.length,
                    last_progress_time=now,
                    replica_of=primary,
                )
                primary = primary or head
                _first_steps(head, template, spec, n_first, now, copied)
    except IntegrityError as exc:
        _remove(copied)
        # Which name the database refused, read after the rollback (only on this path).
        names = [spec.name, *(f"{spec.name}_r{n}" for n in range(1, n_chains))]
        taken = (
            WorkSequence.objects.filter(project=project, name__in=names)
            .order_by("id")
            .values_list("name", flat=True)
            .first()
        )
        if taken is not None:
            raise WorkError(f"a sequence named {taken!r} already exists in this project") from exc
        raise WorkError(f"a sequence or workunit with that name already exists ({exc})") from exc
    except BaseException:
        _remove(copied)
        raise
    assert primary is not None
    return primary


def _first_steps(
    head: WorkSequence, template: JobSpec, spec: SequenceSpec, n: int, now: datetime, copied: list[Path]
) -> None:
    plan = extend_plan(
        SequenceSnapshot(id=head.id, max_result_time=head.max_result_time),
        n,
        restartable_every=spec.restartable_every,
        final=spec.length is not None,
    )
    created = steps_append(
        head=head,
        template=template,
        indices=plan.new_step_indices,
        restartable=plan.restartable_indices,
        final_index=plan.new_step_indices[-1] if plan.sequence.ended else None,
        previous=None,
        now=now,
    )
    first = created[0][0]
    first_inputs_add(first, spec.first_inputs, copied)
    head.head_workunit = first
    head.first_unvalidated = first
    head.first_undispatched = first
    head.save(update_fields=["head_workunit", "first_unvalidated", "first_undispatched"])


def _remove(paths: list[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


def chain_extend(chain: Chain, n_new: int, *, final: bool, now: datetime) -> int:
    """Append ``n_new`` steps to a loaded, locked chain; ``final`` makes the last one upload the
    final state and fixes the length. Returns the number of steps added (0 if it has ended)."""
    head = chain.head
    if chain.snapshot.ended or head.state not in (SequenceState.UNASSIGNED, SequenceState.ASSIGNED):
        return 0
    if not chain.workunits:
        raise WorkError(f"sequence {head.name} has no steps to extend from")
    plan = extend_plan(chain.snapshot, n_new, restartable_every=head.restartable_every, final=final)
    last = chain.workunits[-1]
    created = steps_append(
        head=head,
        template=template_from_step(last),
        indices=plan.new_step_indices,
        restartable=plan.restartable_indices,
        final_index=plan.new_step_indices[-1] if final else None,
        previous=chain.results.get(len(chain.workunits) - 1),
        now=now,
    )
    first_new = created[0][0]
    update = []
    if head.first_undispatched_id is None:
        head.first_undispatched = first_new
        update.append("first_undispatched")
    if head.first_unvalidated_id is None:
        head.first_unvalidated = first_new
        update.append("first_unvalidated")
    if final:
        head.expected_length = plan.sequence.n_workunits
        update.append("expected_length")
    if update:
        head.save(update_fields=update)
    return len(created)


def sequence_extend(
    *, sequence_id: int, n_steps: int, final: bool = False, now: datetime | None = None
) -> int:
    """Append steps to a live, open-ended sequence (admin, API, or a hook outside a refresh).

    With redundancy every replica chain is extended alike, since the chains are compared
    step by step (docs/sequences.md, "Redundancy"). Returns the steps added to ``sequence_id``'s chain.
    """
    now = now or clock.now()
    steps_count_check(n_steps)
    with transaction.atomic():
        head = head_get(sequence_id, lock=False)
        if head is None:
            raise WorkError(f"no sequence with id {sequence_id}")
        added = 0
        for chain_id in group_ids(head):  # ascending ids: one lock order for every caller
            chain_head = head_get(chain_id)
            if chain_head is not None:
                n = chain_extend(chain_load(chain_head), n_steps, final=final, now=now)
                added = n if chain_id == sequence_id else added
        return added
