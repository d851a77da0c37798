"""Keeping a sequence's head true as its steps are validated, and the project's decisions.

``sequence_refresh`` is the one pass over a sequence, shared by the validator's call
(``sequence_on_result_validated``), the sequence-deadline daemon and the admin:

1. lock the head row and load the chain;
2. recompute the head links (first unvalidated step, checkpoint) with the domain's
   ``refresh_head``; an ended sequence whose steps all validated becomes ENDED;
3. replicated chains: compare with the sibling chains at the next checkpoint;
4. (daemon) relocate an assigned sequence whose step, sent to the assigned host, missed its
   deadline, errored or was found invalid (``missed_deadline_plan``), or whose host row is gone;
5. ask the app's hook (hooks.py) whether to extend or end a live sequence;
6. give undispatched steps whose result was withdrawn a new one (``undispatched_repair``).

Every step is idempotent: a second pass with nothing new changes nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce

from apps.core import clock
from apps.sequences.domain.rules import missed_deadline_plan, refresh_head, relocation_plan
from apps.sequences.models import WorkSequence
from apps.sequences.services.create import chain_extend
from apps.sequences.services.hooks import SequenceProgress, hook_decide
from apps.sequences.services.moves import (
    chain_end,
    grace_now,
    max_relocations,
    relocation_apply,
    undispatched_repair,
)
from apps.sequences.services.replica_check import group_ids, replicas_compare
from apps.sequences.services.rows import LIVE_STATES, Chain, chain_load, head_get, head_save
from apps.work.domain.states import SequenceState, ServerState
from apps.work.models import Result, Workunit

logger = logging.getLogger(__name__)

MAX_CHECKPOINTS_PER_PASS = 10


def sequence_refresh(
    *, sequence_id: int, now: datetime, relocate_failed: bool = False, skip_locked: bool = False
) -> bool:
    """One pass over a sequence (steps in the module doc); True if anything changed."""
    with transaction.atomic():
        head = head_get(sequence_id, skip_locked=skip_locked)
        if head is None or head.state not in LIVE_STATES:
            return False
        chain = chain_load(head)
        changed = bool(head_save(chain, refresh_head(chain.snapshot, chain.steps), now=now))
        for _ in range(MAX_CHECKPOINTS_PER_PASS):  # each round confirms one checkpoint or moves the chain
            if not (
                chain.replicated and chain.head.state in LIVE_STATES and replicas_compare(chain, now=now)
            ):
                break
            changed = True
        if relocate_failed and chain.head.state == SequenceState.ASSIGNED:
            judge = missed_deadline_plan if chain.head.assigned_host_id is not None else relocation_plan
            plan = judge(
                chain.snapshot,
                chain.steps,
                now=grace_now(chain, now).timestamp(),
                max_relocations=max_relocations(),
            )
            if plan is not None:
                logger.info("sequence %s: relocating from host %s", head.name, plan.previous_host_id)
                relocation_apply(chain, plan, now=now)
                changed = True
        if chain.head.state in LIVE_STATES:
            changed |= _ask_hook(chain, now)
        if chain.head.state in LIVE_STATES:
            changed |= bool(undispatched_repair(chain_load(chain.head)))
        return changed


def _ask_hook(chain: Chain, now: datetime) -> bool:
    snap, head = chain.snapshot, chain.head
    latest = chain.workunit_at(snap.first_unvalidated_index - 1)
    progress = SequenceProgress(
        sequence_id=head.id,
        name=head.name,
        app_name=head.app.name,
        n_steps=snap.n_workunits,
        n_validated=snap.first_unvalidated_index,
        n_dispatched=snap.first_undispatched_index,
        expected_length=head.expected_length,
        ended=snap.ended,
        latest_validated_result_id=latest.canonical_result_id if latest else None,
    )
    decision = hook_decide(head.app.sequence_hook, progress)
    if decision.end:
        return chain_end(chain, now=now)
    if decision.extend_by > 0:
        if snap.ended:
            logger.warning("sequence %s has ended; the hook's extension is ignored", head.name)
            return False
        return chain_extend(chain, decision.extend_by, final=decision.final, now=now) > 0
    return False


def sequence_on_result_validated(*, workunit_id: int, now: datetime | None = None) -> bool:
    """The validator's call after it validated (or invalidated) results of ``workunit_id``.

    Does nothing for a workunit outside any sequence, so the validator may call it for every
    workunit it handled, after its own transaction committed."""
    sequence_id = Workunit.objects.filter(id=workunit_id).values_list("sequence_id", flat=True).first()
    if sequence_id is None:
        return False
    return sequence_refresh(sequence_id=sequence_id, now=now or clock.now())


def sequence_relocate(*, sequence_id: int, now: datetime | None = None, host_id: int | None = None) -> bool:
    """Deassign an assigned sequence now (admin, or the scheduler when its host lost it) and
    prepare it to restart after its last validated checkpoint. ``host_id``: only if assigned to it."""
    now = now or clock.now()
    with transaction.atomic():
        head = head_get(sequence_id)
        if head is None or head.state != SequenceState.ASSIGNED:
            return False
        if host_id is not None and head.assigned_host_id != host_id:
            return False
        chain = chain_load(head)
        plan = relocation_plan(
            chain.snapshot,
            chain.steps,
            now=grace_now(chain, now).timestamp(),
            max_relocations=max_relocations(),
        )
        relocation_apply(chain, plan, now=now)
        return True


def sequence_deassign_many(*, sequence_ids: list[int], now: datetime | None = None) -> int:
    """The admin's deassign: relocate each assigned sequence from its last restartable state."""
    return sum(sequence_relocate(sequence_id=i, now=now) for i in sequence_ids)


def sequence_end(*, sequence_id: int, now: datetime | None = None) -> bool:
    """End a live sequence now (the project decided); its host is told on its next RPC.

    With redundancy every replica chain ends with it: a chain left running would wait for
    ever for a sibling to compare its checkpoints with. True if ``sequence_id``'s chain ended.
    """
    now = now or clock.now()
    with transaction.atomic():
        head = head_get(sequence_id, lock=False)
        if head is None:
            return False
        ended = False
        for chain_id in group_ids(head):  # ascending ids: one lock order for every caller
            chain_head = head_get(chain_id)
            if chain_head is not None:
                done = chain_end(chain_load(chain_head), now=now)
                ended = done if chain_id == sequence_id else ended
        return ended


def sequence_end_many(*, sequence_ids: list[int], now: datetime | None = None) -> int:
    return sum(sequence_end(sequence_id=i, now=now) for i in sequence_ids)


def sequence_running_steps(*, sequence_ids: list[int]) -> int:
    """Steps in progress on hosts that ending these live sequences (and their replica chains)
    would abort: what an operator is told before and after ending them."""
    primaries = WorkSequence.objects.filter(id__in=sequence_ids, state__in=LIVE_STATES).values_list(
        Coalesce("replica_of_id", "id"), flat=True
    )
    chains = WorkSequence.objects.filter(
        Q(id__in=list(primaries)) | Q(replica_of_id__in=list(primaries)), state__in=LIVE_STATES
    )
    return Result.objects.filter(
        workunit__sequence_id__in=chains.values("id"), server_state=ServerState.IN_PROGRESS
    ).count()
