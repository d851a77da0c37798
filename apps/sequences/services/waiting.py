"""Why a live sequence is not moving, for the admin page and the operators' API (the reasons are
the domain's, apps/sequences/domain/waiting.py)."""

from __future__ import annotations

from datetime import datetime

from apps.core import clock
from apps.sequences.domain.waiting import ChainAt, SequenceWait, waiting_for
from apps.sequences.models import WorkSequence
from apps.sequences.services.replica_check import chain_fresh_host_until, group_ids, unconfirmed_checkpoint
from apps.sequences.services.rows import LIVE_STATES, chain_load
from apps.work.domain.states import SequenceState
from apps.work.models import Workunit


def sequence_wait(*, head: WorkSequence, now: datetime) -> SequenceWait | None:
    """What the chain ``head`` waits for; None when it is over. Reads only (a few queries)."""
    if head.state not in LIVE_STATES:
        return None
    chain = chain_load(head)
    checkpoint = unconfirmed_checkpoint(chain) if chain.replicated else None
    siblings: list[ChainAt] = []
    if checkpoint is not None:
        ids = [i for i in group_ids(head) if i != head.id]
        reached = set(
            Workunit.objects.filter(
                sequence_id__in=ids, sequence_index=checkpoint, canonical_result__isnull=False
            ).values_list("sequence_id", flat=True)
        )
        siblings = [
            ChainAt(
                s.name, s.assigned_host_id if s.state == SequenceState.ASSIGNED else None, s.id in reached
            )
            for s in WorkSequence.objects.filter(id__in=ids).order_by("id")
        ]
    return waiting_for(
        chain.snapshot,
        head.name,
        unconfirmed_checkpoint=checkpoint,
        siblings=siblings,
        fresh_host_until=chain_fresh_host_until(head) if chain.replicated else None,
        now=clock.to_unix(now),
    )
