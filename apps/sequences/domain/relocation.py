"""Head bookkeeping and relocation of work sequences (decisions in rules.py).

The sequence-deadline daemon, one pass per sequence:

1. refresh the head links from the steps (``refresh_head``);
2. find dispatched steps after the checkpoint that missed their deadline or failed;
3. if any: deassign and prepare the restart after the checkpoint (``relocation_plan``).

Where a relocated sequence restarts. BOINC's design keeps a sequence's state on its host between
steps and has it uploaded only at restartable steps (its climate example makes every 7th result
restartable, with file infos that upload the large state files); the head links to the first
workunit in the sequence without a validated result. So the only states the
server holds are the initial one and those of validated restartable steps, and the restart point is
just after the last of them. A step validated after that point (in the climate example, any of the
first six before step 7 validated) produced a state that never left the old host: nothing can
continue from its output, so the restart point cannot move past it. Such a step is *re-opened*
instead: it is redone from the restart point like every other step after it, its workunit loses its
canonical result (the old result keeps its VALID state and its credit: it was computed honestly, on a
branch that died with the host), its new result is validated and assimilated as the step's output,
and the first-unvalidated link moves back to the restart point. Keeping the old canonical result
instead would have the scheduler tell the new host to abort the redone step (its workunit is done)
and the next step would never get its input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from apps.sequences.domain.types import (
    Checkpoint,
    RelocationPlan,
    SequenceSnapshot,
    SequenceStep,
)
from apps.work.domain.states import SequenceState, ServerState


def refresh_head(seq: SequenceSnapshot, steps: Iterable[SequenceStep]) -> SequenceSnapshot:
    """Recompute the head links from the steps; an ended sequence whose steps all validated ends.

    The checkpoint only moves forward, so a checkpoint adopted from a replica chain is kept.
    """
    steps = list(steps)
    validated = {s.index for s in steps if s.validated}
    first_unvalidated = next((i for i in range(seq.n_workunits) if i not in validated), seq.n_workunits)
    ck_index, ck_result = seq.last_restartable_validated_index, seq.checkpoint_result_id
    for s in steps:
        if s.restartable and s.validated and (ck_index is None or s.index > ck_index):
            ck_index, ck_result = s.index, s.canonical_result_id
    head = replace(
        seq,
        first_unvalidated_index=first_unvalidated,
        last_restartable_validated_index=ck_index,
        checkpoint_result_id=ck_result,
    )
    if seq.ended and first_unvalidated == seq.n_workunits and seq.state != SequenceState.ERROR:
        head = replace(head, state=SequenceState.ENDED, assigned_host_id=None)
    return head


def failed_step_indices(
    seq: SequenceSnapshot, steps: Iterable[SequenceStep], *, now: float
) -> tuple[int, ...]:
    """Dispatched steps after the checkpoint whose result missed its deadline, failed or was invalid."""
    after = -1 if seq.last_restartable_validated_index is None else seq.last_restartable_validated_index
    return tuple(
        sorted(s.index for s in steps if after < s.index < seq.first_undispatched_index and s.failed(now))
    )


def missed_deadline_plan(
    seq: SequenceSnapshot,
    steps: Sequence[SequenceStep],
    *,
    now: float,
    max_relocations: int | None = None,
) -> RelocationPlan | None:
    """The sequence-deadline daemon's decision: relocate an assigned sequence with a failed step."""
    if seq.state != SequenceState.ASSIGNED:
        return None
    seq = refresh_head(seq, steps)
    if seq.state != SequenceState.ASSIGNED or not failed_step_indices(seq, steps, now=now):
        return None
    return relocation_plan(seq, steps, now=now, max_relocations=max_relocations)


def relocation_plan(
    seq: SequenceSnapshot,
    steps: Sequence[SequenceStep],
    *,
    now: float,
    max_relocations: int | None = None,
    checkpoint: Checkpoint | None = None,
) -> RelocationPlan:
    """Deassign ``seq`` and prepare it to restart after its checkpoint (see the module doc).

    Every dispatched step from the restart point on is re-created (``recreate_step_indices``);
    those among them that were validated are re-opened, so the first unvalidated step is the
    restart point. ``checkpoint`` adopts a later checkpoint from elsewhere (a replica chain that won the
    comparison at that step); an earlier one than the head's is ignored. A sequence that is
    ENDED (perhaps just now, by the refresh) or in ERROR is only refreshed.
    """
    seq = refresh_head(seq, steps)
    failed = failed_step_indices(seq, steps, now=now)
    if seq.state in (SequenceState.ENDED, SequenceState.ERROR):
        ck = seq.last_restartable_validated_index
        return RelocationPlan(seq, seq.assigned_host_id, ck, seq.checkpoint_result_id, (), failed)
    ck_index, ck_result = seq.last_restartable_validated_index, seq.checkpoint_result_id
    if checkpoint is not None and (ck_index is None or checkpoint.index > ck_index):
        ck_index, ck_result = checkpoint.index, checkpoint.state_result_id
    restart = 0 if ck_index is None else ck_index + 1
    moved = replace(
        seq,
        state=SequenceState.UNASSIGNED,
        assigned_host_id=None,
        first_unvalidated_index=min(restart, seq.first_unvalidated_index),
        first_undispatched_index=min(restart, seq.first_undispatched_index),
        last_restartable_validated_index=ck_index,
        checkpoint_result_id=ck_result,
        n_relocations=seq.n_relocations + 1,
    )
    if max_relocations is not None and moved.n_relocations > max_relocations:
        unsent = tuple(s.result_id for s in steps if s.sendable and s.result_id is not None)
        return RelocationPlan(
            replace(moved, state=SequenceState.ERROR),
            seq.assigned_host_id,
            ck_index,
            ck_result,
            (),
            failed,
            unsent,
        )
    recreate = tuple(
        sorted(
            s.index
            for s in steps
            if restart <= s.index < seq.first_undispatched_index
            and s.server_state not in (ServerState.UNSENT, ServerState.INACTIVE)
        )
    )
    return RelocationPlan(moved, seq.assigned_host_id, ck_index, ck_result, recreate, failed)
