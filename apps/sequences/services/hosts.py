"""A host's side of its work sequences, for the scheduler RPC: taking a sequence,
letting go of one it was told has ended, and the state files it holds.

The scheduler's sequence source (apps.scheduler.services.sources.sequences) decides when;
these read and write the rows.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Exists, OuterRef, Q

from apps.hosts.models import Host
from apps.projects.models import Project
from apps.sequences.models import WorkSequence
from apps.work.domain.states import Outcome, SequenceState
from apps.work.models import OutputFile, Result


def sequence_assign(*, sequence_id: int, host: Host, now: datetime) -> bool:
    """Claim an UNASSIGNED sequence for ``host``; False if another RPC claimed it first (the
    conditional UPDATE gives it to exactly one)."""
    claimed = WorkSequence.objects.filter(id=sequence_id, state=SequenceState.UNASSIGNED).update(
        state=SequenceState.ASSIGNED, assigned_host=host, assigned_time=now, ended_notified=False
    )
    return claimed == 1


def sequence_release_notified(*, sequence: WorkSequence, host: Host) -> list[str]:
    """The host is told that its sequence ended (or failed for good): the assignment goes.
    Returns the state files it holds for the sequence, which it may now delete."""
    names = list(
        OutputFile.objects.filter(result__host=host, result__workunit__sequence_id=sequence.id)
        .filter(Q(sticky=True) | Q(upload=False))
        .values_list("name", flat=True)
    )
    WorkSequence.objects.filter(id=sequence.id, assigned_host=host).update(
        assigned_host=None, assigned_time=None, ended_notified=True
    )
    return names


def state_files_released(*, project: Project, host: Host, reported: list[str]) -> list[str]:
    """State files the host may delete now that it reported these results: a reported step's
    predecessor state is no longer needed on the host."""
    if not reported:
        return []
    done = Result.objects.filter(
        project=project,
        name__in=reported,
        host=host,
        outcome=Outcome.SUCCESS,
        workunit__sequence_id__isnull=False,
        workunit__sequence_index__gt=0,
    ).values_list("workunit__sequence_id", "workunit__sequence_index")
    before = Q()
    for seq_id, index in done:
        assert index is not None  # sequence_index__gt=0 above
        before |= Q(result__workunit__sequence_id=seq_id, result__workunit__sequence_index=index - 1)
    if not before:
        return []
    return list(
        OutputFile.objects.filter(before, result__host=host)
        .filter(Q(sticky=True) | Q(upload=False))
        .values_list("name", flat=True)
    )


def state_files_of_assignment(*, host: Host, names: set[str]) -> dict[str, OutputFile]:
    """Those of ``names`` that are state files ``host`` made in its current assignment of their
    sequence: the reply declares them as the host's own (sticky, never downloaded)."""
    if not names:
        return {}
    assigned_to_host = WorkSequence.objects.filter(
        id=OuterRef("result__workunit__sequence_id"),
        assigned_host=host,
        assigned_time__lte=OuterRef("result__sent_time"),
    )
    rows = OutputFile.objects.filter(Exists(assigned_to_host), name__in=names, result__host=host)
    return {o.name: o for o in rows}
