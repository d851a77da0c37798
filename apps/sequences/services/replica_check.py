"""Redundancy for work sequences: replica chains compared at checkpoints (seed 001; the design
and its trade-off are in apps/sequences/domain/replicas.py).

With ``App.sequence_redundancy`` on, ``sequence_create`` makes R chains (``replica_of`` the first)
with the same steps; the scheduler never gives a host a chain whose siblings it holds or helped
compute. Each step workunit is validated alone by the validator (quorum 1); a restartable step
only counts once the chains agree on it (rows.py), which ``replicas_compare`` decides
when a chain's refresh finds its next checkpoint validated:

1. gather every chain's result for checkpoint step k (its canonical result) and read the uploaded
   state files as the payload (the client's MD5 if a file is not on disk);
2. ``compare_replica_steps`` with the app's comparison (bitwise, tolerant numeric or trivial) and a
   quorum of ``max(2, app.min_quorum)`` chains on distinct hosts, in a fixed order so that every
   chain computes the same verdict;
3. this chain agrees: its checkpoint moves to k. It disagrees: its step-k result becomes INVALID,
   the validated steps it computed from the bad state lose their canonical result, and it is
   relocated to continue from the agreed state. No consensus can come (all reported, no quorum):
   every reported chain's step-k result is marked INVALID, and each chain whose step-k result is
   so marked restarts from the last agreed checkpoint on another host (``chain_disagreement``).
   After the project's ``sequence_max_disagreements`` restarts the chains end in ERROR instead,
   with the reason on the head; a chain whose sibling ended in ERROR ends with it, since no
   quorum can form without it.

Each chain only writes its own head; the others follow on their own refresh (the validator's call
or the sequence-deadline daemon), so no two head rows are locked at once. The INVALID marks on the
step-k results are what tells the other chains, whose refresh may come after this chain restarted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from django.db.models import Q

from apps.applications.models import App
from apps.sequences.domain.rules import (
    Checkpoint,
    ReplicaCheckpoint,
    SequenceSnapshot,
    compare_replica_steps,
    refresh_head,
    relocation_plan,
)
from apps.sequences.models import WorkSequence
from apps.sequences.services.moves import chain_fail, grace_now, relocation_apply
from apps.sequences.services.rows import Chain, head_save
from apps.sequences.services.steps import state_files, uploaded_path
from apps.work.domain.states import SequenceState, ValidateState
from apps.work.domain.validation import bitwise_equal, tolerant_numeric_equal
from apps.work.models import Result, Workunit

Payload = tuple[bytes, ...]


def group_ids(head: WorkSequence) -> list[int]:
    primary = head.replica_of_id or head.id
    return sorted(
        WorkSequence.objects.filter(Q(id=primary) | Q(replica_of_id=primary)).values_list("id", flat=True)
    )


def sibling_host_ids(head: WorkSequence) -> set[int]:
    """Hosts that hold a sibling chain or computed any of its results (independence)."""
    siblings = [i for i in group_ids(head) if i != head.id]
    held = WorkSequence.objects.filter(id__in=siblings, assigned_host__isnull=False).values_list(
        "assigned_host_id", flat=True
    )
    ran = Result.objects.filter(workunit__sequence_id__in=siblings, host__isnull=False).values_list(
        "host_id", flat=True
    )
    return set(held) | set(ran)


def _payload(result: Result) -> Payload:
    parts = []
    for output in state_files(result):
        path = uploaded_path(result.project, output.name)
        parts.append(path.read_bytes() if path is not None else b"md5:" + output.md5_cksum.encode())
    return tuple(parts)


def _comparator(app: App) -> Callable[[Payload, Payload], bool]:
    def same(a: Payload, b: Payload) -> bool:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if app.validator == App.Validator.TRIVIAL:
                continue
            if x.startswith(b"md5:") or y.startswith(b"md5:") or app.validator == App.Validator.BITWISE:
                if not bitwise_equal(x, y):
                    return False
            elif not tolerant_numeric_equal(
                x, y, rel_tol=app.validator_rel_tol, abs_tol=app.validator_abs_tol
            ):
                return False
        return True

    return same


def _next_checkpoint(chain: Chain) -> int | None:
    confirmed = chain.snapshot.last_restartable_validated_index
    return next(
        (
            i
            for i, wu in enumerate(chain.workunits)
            if wu.restartable and wu.canonical_result_id and (confirmed is None or i > confirmed)
        ),
        None,
    )


def replicas_compare(chain: Chain, *, now: datetime) -> bool:
    """Compare this chain with its siblings at its next validated checkpoint (module doc)."""
    if not chain.replicated:
        return False
    failed = _sibling_in_error(chain.head)
    if failed is not None:
        chain_fail(chain, f"replica chain {failed.name} ended in error: {failed.error_reason}"[:500], now=now)
        return True
    k = _next_checkpoint(chain)
    if k is None:
        return False
    ids = group_ids(chain.head)
    rows = {
        wu.sequence_id: wu
        for wu in Workunit.objects.filter(sequence_id__in=ids, sequence_index=k).select_related(
            "canonical_result__project", "canonical_result__workunit"
        )
    }
    replicas = []
    for seq_id in ids:
        result = rows[seq_id].canonical_result if seq_id in rows else None
        replicas.append(
            ReplicaCheckpoint(seq_id, result.host_id, result.id, _payload(result))
            if result is not None
            else ReplicaCheckpoint(seq_id, None)
        )
    app = chain.head.app
    verdict = compare_replica_steps(
        k, replicas, min_quorum=min(max(2, app.min_quorum), len(ids)), compare=_comparator(app)
    )
    me = chain.head.id
    if me in verdict.valid_sequence_ids:
        own = rows[me].canonical_result_id
        chain.steps = [replace(s, canonical_result_id=own) if s.index == k else s for s in chain.steps]
        head_save(chain, refresh_head(_with_checkpoint(chain, k, own), chain.steps), now=now)
        return True
    if me in verdict.invalid_sequence_ids and verdict.canonical_result_id is not None:
        # Step k keeps its (now INVALID) canonical result so it still counts as done: the chain
        # continues from the agreed state, and only the steps computed after it are redone.
        Result.objects.filter(id=rows[me].canonical_result_id).update(validate_state=ValidateState.INVALID)
        _unvalidate(chain, first=k + 1)
        plan = relocation_plan(
            chain.snapshot,
            chain.steps,
            now=grace_now(chain, now).timestamp(),
            checkpoint=Checkpoint(k, verdict.canonical_result_id),
        )
        relocation_apply(chain, plan, now=now)
        return True
    mine = rows[me].canonical_result
    if verdict.need_more_replicas and mine is not None:
        # Every chain that reported step k is told by its mark, whichever refreshes first.
        reported = [r.result_id for r in replicas if r.result_id is not None]
        Result.objects.filter(id__in=reported).update(validate_state=ValidateState.INVALID)
        mine.validate_state = ValidateState.INVALID
    if mine is not None and mine.validate_state == ValidateState.INVALID:
        chain_disagreement(chain, k, now=now)
        return True
    return False


def _sibling_in_error(head: WorkSequence) -> WorkSequence | None:
    return (
        WorkSequence.objects.filter(id__in=group_ids(head), state=SequenceState.ERROR)
        .exclude(id=head.id)
        .order_by("id")
        .first()
    )


def chain_disagreement(chain: Chain, k: int, *, now: datetime) -> None:
    """The chains could not agree at step ``k``: restart this one from the last agreed
    checkpoint on another host, or end it in ERROR once the project's restarts are used up."""
    head = chain.head
    head.n_disagreements += 1
    head.save(update_fields=["n_disagreements"])
    allowed = head.project.sequence_max_disagreements
    if head.n_disagreements > allowed:
        times = "1 time" if head.n_disagreements == 1 else f"{head.n_disagreements} times"
        chain_fail(
            chain,
            f"the replica chains disagreed at step {k} ({times}; the project allows {allowed} restarts)",
            now=now,
        )
        return
    confirmed = chain.snapshot.last_restartable_validated_index
    _unvalidate(chain, first=0 if confirmed is None else confirmed + 1)
    plan = relocation_plan(chain.snapshot, chain.steps, now=grace_now(chain, now).timestamp())
    relocation_apply(chain, plan, now=now)


def _with_checkpoint(chain: Chain, k: int, result_id: int | None) -> SequenceSnapshot:
    return replace(chain.snapshot, last_restartable_validated_index=k, checkpoint_result_id=result_id)


def _unvalidate(chain: Chain, *, first: int) -> None:
    """Steps from ``first`` on were computed from state the chains disagree on: their results are
    INVALID and their workunits lose the canonical result, so the redone steps are validated anew."""
    wus = [wu for wu in chain.workunits[first:] if wu.canonical_result_id is not None]
    Result.objects.filter(id__in=[wu.canonical_result_id for wu in wus]).update(
        validate_state=ValidateState.INVALID
    )
    Workunit.objects.filter(id__in=[wu.id for wu in wus]).update(canonical_result=None)
    for wu in wus:
        wu.canonical_result_id = None
    chain.steps = [
        s
        if s.index < first or s.canonical_result_id is None
        else replace(s, canonical_result_id=None, validate_state=ValidateState.INVALID)
        for s in chain.steps
    ]
