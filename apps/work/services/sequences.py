"""Admin-side operations on work sequences (seed 001)."""

from __future__ import annotations

from django.db import transaction

from apps.work.domain.states import SequenceState
from apps.work.models import WorkSequence


def sequence_deassign_many(*, sequence_ids: list[int]) -> int:
    """Remove the assignment; the next host starts where the sequence stands."""
    with transaction.atomic():
        return WorkSequence.objects.filter(id__in=sequence_ids, state=SequenceState.ASSIGNED).update(
            state=SequenceState.UNASSIGNED, assigned_host=None, assigned_time=None
        )


def sequence_end_many(*, sequence_ids: list[int]) -> int:
    """End sequences; the assigned host is told on its next RPC."""
    with transaction.atomic():
        return (
            WorkSequence.objects.filter(id__in=sequence_ids)
            .exclude(state=SequenceState.ENDED)
            .update(state=SequenceState.ENDED)
        )
