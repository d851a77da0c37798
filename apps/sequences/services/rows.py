"""Work sequences: rows to the pure types and back.

A chain is one ``WorkSequence`` head and its step workunits (``sequence_index`` 0..n-1). Each
step's *current* result is its newest one: relocation gives a step a new result and leaves the
old one over. ``chain_load`` turns the rows into a ``SequenceSnapshot`` and ``SequenceStep``s for
apps.sequences.domain.rules; ``head_save`` writes a new snapshot back into the head row.

Two mappings hide this project's storage from the domain:

* step results wait in server_state INACTIVE (the transitioner makes none for step workunits, and
  the general scheduler source only sends UNSENT ones), so INACTIVE is the domain's UNSENT;
* in a replicated sequence (domain/replicas.py), a restartable step only counts as validated once
  the chains agreed on it: up to the head's confirmed checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from django.db import connection
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from apps.core import clock
from apps.core.db import quoted_table
from apps.sequences.domain.rules import SequenceSnapshot, SequenceStep
from apps.sequences.models import WorkSequence
from apps.sequences.services.steps import checkpoint_release, checkpoint_stage, first_inputs_release
from apps.work.domain.states import Outcome, SequenceState, ServerState, ValidateState
from apps.work.models import Result, Workunit

LIVE_STATES = (SequenceState.UNASSIGNED, SequenceState.ASSIGNED)
ORPHAN_HOST = 0


@dataclass(slots=True)
class Chain:
    """A head row, its steps in order, each step's current result, and their pure snapshots."""

    head: WorkSequence
    workunits: list[Workunit]
    results: dict[int, Result]  # step index -> current result
    snapshot: SequenceSnapshot
    steps: list[SequenceStep]
    replicated: bool = False

    def workunit_at(self, index: int) -> Workunit | None:
        return self.workunits[index] if 0 <= index < len(self.workunits) else None


def steps_counted(qs: QuerySet[WorkSequence]) -> QuerySet[WorkSequence]:
    """The sequences with ``n_steps``, their number of step workunits."""
    steps = (
        Workunit.objects.filter(sequence_id=OuterRef("pk"))
        .order_by()
        .values("sequence_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    return qs.annotate(n_steps=Coalesce(Subquery(steps, output_field=IntegerField()), 0))


def steps_delete(sender: object, instance: WorkSequence, **kwargs: object) -> None:
    """A sequence deleted takes its steps with it (connected to pre_delete in apps.py)."""
    Workunit.objects.filter(sequence_id=instance.pk).delete()


def steps_purge_hold() -> tuple[str, tuple[object, ...]]:
    """db_purge's condition keeping the steps of a sequence that has not ended
    (apps.work.services.extensions.purge_hold_register)."""
    return (
        f"w.sequence_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {quoted_table(WorkSequence)} s "
        "WHERE s.id = w.sequence_id AND s.state IN (%s, %s))",
        (int(SequenceState.ENDED), int(SequenceState.ERROR)),
    )


def heads_locked(qs: QuerySet[WorkSequence], *, skip_locked: bool = False) -> QuerySet[WorkSequence]:
    """Row locks on the head rows (PostgreSQL); on SQLite the write lock serializes everything."""
    if connection.features.has_select_for_update:
        if skip_locked and connection.features.has_select_for_update_skip_locked:
            return qs.select_for_update(skip_locked=True, of=("self",))
        return qs.select_for_update(of=("self",))
    return qs


def head_get(sequence_id: int, *, lock: bool = True, skip_locked: bool = False) -> WorkSequence | None:
    qs = WorkSequence.objects.select_related("app", "project", "checkpoint_result__workunit").filter(
        id=sequence_id
    )
    if lock:
        qs = heads_locked(qs, skip_locked=skip_locked)
    return qs.first()


def checkpoint_index(head: WorkSequence) -> int | None:
    result = head.checkpoint_result
    return None if result is None else result.workunit.sequence_index


def _domain_state(result: Result | None) -> ServerState | None:
    if result is None:
        return None
    state = ServerState(result.server_state)
    return ServerState.UNSENT if state == ServerState.INACTIVE else state


def _step(wu: Workunit, result: Result | None, confirmed_upto: int | None, replicated: bool) -> SequenceStep:
    index = wu.sequence_index or 0
    canonical = wu.canonical_result_id
    if replicated and wu.restartable and (confirmed_upto is None or index > confirmed_upto):
        canonical = None  # validated alone, but not yet agreed with the other chains
    return SequenceStep(
        index=index,
        workunit_id=wu.id,
        result_id=None if result is None else result.id,
        server_state=_domain_state(result),
        outcome=Outcome(result.outcome) if result else Outcome.INIT,
        validate_state=ValidateState(result.validate_state) if result else ValidateState.INIT,
        report_deadline=clock.to_unix(result.report_deadline) if result and result.report_deadline else None,
        restartable=wu.restartable,
        canonical_result_id=canonical,
    )


def chain_load(head: WorkSequence) -> Chain:
    """Load the steps of ``head`` (two queries) and build the pure snapshot."""
    workunits = list(Workunit.objects.filter(sequence_id=head.id).order_by("sequence_index"))
    index_of = {wu.id: wu.sequence_index or 0 for wu in workunits}
    results: dict[int, Result] = {}
    for result in Result.objects.filter(workunit__sequence_id=head.id).order_by("id"):
        results[index_of[result.workunit_id]] = result  # the newest wins
    replicated = head.app.sequence_redundancy and (
        head.replica_of_id is not None or WorkSequence.objects.filter(replica_of=head).exists()
    )
    confirmed = checkpoint_index(head)
    steps = [_step(wu, results.get(i), confirmed, replicated) for i, wu in enumerate(workunits)]
    return Chain(head, workunits, results, _snapshot(head, workunits, confirmed), steps, replicated)


def _index_of(wu_id: int | None, workunits: list[Workunit]) -> int:
    if wu_id is None:
        return len(workunits)
    return next((i for i, wu in enumerate(workunits) if wu.id == wu_id), len(workunits))


def _snapshot(head: WorkSequence, workunits: list[Workunit], confirmed: int | None) -> SequenceSnapshot:
    n = len(workunits)
    state = SequenceState(head.state)
    return SequenceSnapshot(
        id=head.id,
        state=state,
        # A host row deleted under an assigned sequence leaves it orphaned: host 0, which no RPC
        # has; the sequence-deadline daemon relocates it.
        assigned_host_id=(head.assigned_host_id or ORPHAN_HOST) if state == SequenceState.ASSIGNED else None,
        max_result_time=head.max_result_time,
        first_unvalidated_index=_index_of(head.first_unvalidated_id, workunits),
        first_undispatched_index=_index_of(head.first_undispatched_id, workunits),
        n_workunits=n,
        ended=state == SequenceState.ENDED
        or (head.expected_length is not None and n >= head.expected_length),
        restartable_indices=frozenset(i for i, wu in enumerate(workunits) if wu.restartable),
        last_restartable_validated_index=confirmed,
        checkpoint_result_id=head.checkpoint_result_id,
        n_relocations=head.n_relocations,
    )


def head_save(chain: Chain, new: SequenceSnapshot, *, now: datetime) -> list[str]:
    """Write ``new`` into the head row; returns the fields that changed (saved)."""
    head, old = chain.head, chain.snapshot
    changed: dict[str, object] = {}

    def wu_id(index: int) -> int | None:
        wu = chain.workunit_at(index)
        return None if wu is None else wu.id

    if new.state != old.state:
        changed["state"] = new.state
        if new.state in (SequenceState.ENDED, SequenceState.ERROR) and old.state == SequenceState.ASSIGNED:
            # The host is told on its next RPC (ctx.sequences_ended / unassigned); the scheduler
            # then clears assigned_host, so the row remembers whom to tell until then.
            changed["ended_notified"] = False
        elif new.assigned_host_id != head.assigned_host_id:
            changed["assigned_host_id"] = new.assigned_host_id
            changed["assigned_time"] = now if new.assigned_host_id is not None else None
    if new.first_unvalidated_index != old.first_unvalidated_index or head.first_unvalidated_id != wu_id(
        new.first_unvalidated_index
    ):
        changed["first_unvalidated_id"] = wu_id(new.first_unvalidated_index)
        if new.first_unvalidated_index > old.first_unvalidated_index:
            changed["last_progress_time"] = now
    if head.first_undispatched_id != wu_id(new.first_undispatched_index):
        changed["first_undispatched_id"] = wu_id(new.first_undispatched_index)
    if new.checkpoint_result_id != head.checkpoint_result_id:
        changed["checkpoint_result_id"] = new.checkpoint_result_id
    if new.n_relocations != head.n_relocations:
        changed["n_relocations"] = new.n_relocations
    previous_checkpoint = head.checkpoint_result
    for name, value in changed.items():
        setattr(head, name, value)
    if changed:
        head.save(update_fields=list(changed))
    if "checkpoint_result_id" in changed:
        _checkpoint_moved(head, previous_checkpoint)
    chain.snapshot = replace(new, n_workunits=len(chain.workunits))
    return list(changed)


def _checkpoint_moved(head: WorkSequence, previous: Result | None) -> None:
    if head.checkpoint_result_id is not None:
        current = Result.objects.select_related("workunit", "project").get(id=head.checkpoint_result_id)
        head.checkpoint_result = current
        checkpoint_stage(current)
        if previous is None:
            first_inputs_release(head)  # no relocation restarts from step 0 any more
    if previous is not None and not WorkSequence.objects.filter(checkpoint_result=previous).exists():
        checkpoint_release(previous)
