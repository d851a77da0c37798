"""Redundancy for work sequences: replica chains compared at checkpoints (the design
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
   quorum can form without it, and one that is not valid at its next checkpoint while a sibling
   ENDED (a quorum agreed on the final state without it) ends too: its remaining steps are not
   needed, as BOINC drops a workunit's unneeded results.

Who re-runs a chain: never a host that holds a sibling or computed a sibling's result that still
counts (a result found INVALID, or retired when its chain moved, does not); for one delay bound
after the chain moved, not a host that computed a result found INVALID in the group either, so a
host that ran neither disagreeing chain takes it when one asks (``replica_host_fits``).

A file gone from the upload area (its step was assimilated and its files deleted before the slower
chain reached the checkpoint) is compared by the MD5 its client reported.

Each chain only writes its own head; the others follow on their own refresh (the validator's call
or the sequence-deadline daemon), so no two head rows are locked at once. The INVALID marks on the
step-k results are what tells the other chains, whose refresh may come after this chain restarted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from django.db.models import Q

from apps.applications.models import App
from apps.core import clock
from apps.sequences.domain.rules import (
    Checkpoint,
    ReplicaCheckpoint,
    ReplicaVerdict,
    SequenceSnapshot,
    compare_replica_steps,
    follow_sibling_chains,
    fresh_host_until,
    refresh_head,
    relocation_plan,
    replica_host_allowed,
)
from apps.sequences.models import WorkSequence
from apps.sequences.services.moves import chain_end, chain_fail, grace_now, relocation_apply
from apps.sequences.services.rows import Chain, head_save
from apps.sequences.services.steps import default_delay_bound, state_files, uploaded_path
from apps.work.domain.states import Outcome, SequenceState, ValidateState
from apps.work.domain.validation import bitwise_equal, tolerant_numeric_equal
from apps.work.models import Result, Workunit

OVER = (SequenceState.ENDED, SequenceState.ERROR)
Payload = tuple[bytes, ...]
MD5 = b"md5:"  # a payload part that is only the client's checksum of a file no longer on disk
RETIRED = (Outcome.DIDNT_NEED, Outcome.NO_REPLY)  # dropped when their chain moved on


def group_ids(head: WorkSequence) -> list[int]:
    primary = head.replica_of_id or head.id
    return sorted(
        WorkSequence.objects.filter(Q(id=primary) | Q(replica_of_id=primary)).values_list("id", flat=True)
    )


def sibling_host_ids(head: WorkSequence) -> set[int]:
    """Hosts that hold a sibling chain or computed one of its results that still counts
    (independence); a result found INVALID or retired (its chain restarted) does not."""
    siblings = [i for i in group_ids(head) if i != head.id]
    held = WorkSequence.objects.filter(id__in=siblings, assigned_host__isnull=False).values_list(
        "assigned_host_id", flat=True
    )
    ran = (
        Result.objects.filter(workunit__sequence_id__in=siblings, host__isnull=False)
        .exclude(validate_state=ValidateState.INVALID)
        .exclude(outcome__in=RETIRED)
        .values_list("host_id", flat=True)
    )
    return set(held) | set(ran)


def chain_fresh_host_until(head: WorkSequence) -> float | None:
    relocated = None if head.relocated_time is None else clock.to_unix(head.relocated_time)
    return fresh_host_until(relocated, delay_bound=default_delay_bound(head.max_result_time))


def replica_host_fits(head: WorkSequence, host_id: int, *, now: datetime) -> bool:
    """Whether ``host_id`` may take the chain ``head`` now (domain ``replica_host_allowed``): a
    fresh host is wanted for one delay bound after the chain moved, as the relocation
    rule passes over the old host for that long."""
    until = chain_fresh_host_until(head)
    fresh_wanted = until is not None and clock.to_unix(now) < until
    disagreed: set[int] = set()
    if fresh_wanted:
        disagreed = set(
            Result.objects.filter(
                workunit__sequence_id__in=group_ids(head),
                validate_state=ValidateState.INVALID,
                host__isnull=False,
            ).values_list("host_id", flat=True)
        )
    return replica_host_allowed(
        host_id, sibling_host_ids(head), disagreed_host_ids=disagreed, fresh_host_wanted=fresh_wanted
    )


def _payload(result: Result) -> Payload:
    parts = []
    for output in state_files(result):
        path = uploaded_path(result.project, output.name)
        parts.append(path.read_bytes() if path is not None else MD5 + output.md5_cksum.encode())
    return tuple(parts)


def _comparator(app: App) -> Callable[[Payload, Payload], bool]:
    def same(a: Payload, b: Payload) -> bool:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if app.validator == App.Validator.TRIVIAL:
                continue
            if x.startswith(MD5) or y.startswith(MD5):
                # One file is gone from the upload area (its step was assimilated before the
                # slower chain got there): compare checksums, the only thing both sides have.
                if _md5_of(x) != _md5_of(y):
                    return False
            elif app.validator == App.Validator.BITWISE:
                if not bitwise_equal(x, y):
                    return False
            elif not tolerant_numeric_equal(
                x, y, rel_tol=app.validator_rel_tol, abs_tol=app.validator_abs_tol
            ):
                return False
        return True

    return same


def _md5_of(part: bytes) -> bytes:
    return (
        part[len(MD5) :].strip().lower() if part.startswith(MD5) else hashlib.md5(part).hexdigest().encode()
    )


def unconfirmed_checkpoint(chain: Chain) -> int | None:
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
    """Compare this chain with its siblings at its next validated checkpoint, or end it as its
    siblings did (module doc); True if the chain changed."""
    if not chain.replicated:
        return False
    over = list(
        WorkSequence.objects.filter(id__in=group_ids(chain.head), state__in=OVER)
        .exclude(id=chain.head.id)
        .order_by("id")
    )
    follow = follow_sibling_chains(SequenceState(s.state) for s in over)
    if follow == SequenceState.ERROR:
        failed = next(s for s in over if s.state == SequenceState.ERROR)
        chain_fail(chain, f"replica chain {failed.name} ended in error: {failed.error_reason}"[:500], now=now)
        return True
    k = unconfirmed_checkpoint(chain)
    check = None if k is None else _check(chain, k)
    if check is not None and chain.head.id in check.verdict.valid_sequence_ids:
        own = check.rows[chain.head.id].canonical_result_id
        chain.steps = [replace(s, canonical_result_id=own) if s.index == k else s for s in chain.steps]
        head_save(chain, refresh_head(_with_checkpoint(chain, check.k, own), chain.steps), now=now)
        return True
    if follow == SequenceState.ENDED:
        return chain_end(chain, now=now)  # the others agreed on the final state without it
    return check is not None and _disagreed(chain, check, now=now)


@dataclass(frozen=True, slots=True)
class _Check:
    k: int
    verdict: ReplicaVerdict
    rows: dict[int | None, Workunit]  # chain id -> its step-k workunit
    reported: tuple[int, ...]  # the chains' step-k results


def _check(chain: Chain, k: int) -> _Check:
    """Steps 1-2 of the module doc: every chain's step-k result, compared."""
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
    reported = tuple(r.result_id for r in replicas if r.result_id is not None)
    return _Check(k, verdict, rows, reported)


def _disagreed(chain: Chain, check: _Check, *, now: datetime) -> bool:
    """Step 3 of the module doc for a chain that is not valid at the checkpoint."""
    me, k, verdict = chain.head.id, check.k, check.verdict
    if me in verdict.invalid_sequence_ids and verdict.canonical_result_id is not None:
        # Step k keeps its (now INVALID) canonical result so it still counts as done: the chain
        # continues from the agreed state, and only the steps computed after it are redone.
        Result.objects.filter(id=check.rows[me].canonical_result_id).update(  # type: ignore[misc]  # None: no row
            validate_state=ValidateState.INVALID
        )
        _unvalidate(chain, first=k + 1)
        plan = relocation_plan(
            chain.snapshot,
            chain.steps,
            now=grace_now(chain, now).timestamp(),
            checkpoint=Checkpoint(k, verdict.canonical_result_id),
        )
        relocation_apply(chain, plan, now=now)
        return True
    mine = check.rows[me].canonical_result
    if verdict.need_more_replicas and mine is not None:
        # Every chain that reported step k is told by its mark, whichever refreshes first.
        Result.objects.filter(id__in=check.reported).update(validate_state=ValidateState.INVALID)
        mine.validate_state = ValidateState.INVALID
    if mine is not None and mine.validate_state == ValidateState.INVALID:
        chain_disagreement(chain, k, now=now)
        return True
    return False


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
