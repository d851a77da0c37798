"""Redundancy for work sequences (in BOINC's design, corresponding groups of results belong to
different workunits): replica chains compared at restartable checkpoints.

Design. A replicated sequence is R independent chains (each its own ``SequenceSnapshot`` with
its own step workunits), assigned to R different hosts (``replica_host_allowed``). Step k of
every chain computes the same thing, so the chains' results for step k form the group that
BOINC's per-workunit redundancy would compare, spread over R workunits. Groups are compared only
at restartable steps, where each chain uploads its full state: ``compare_replica_steps`` runs
``check_set`` over the chains that have reported checkpoint k and says which chains agree. The
service then marks the agreeing chains' step-k results VALID (their checkpoint moves to k) and
relocates each disagreeing chain to another host with ``relocation_plan(checkpoint=Checkpoint(k,
canonical_result_id))``: it continues from the agreed state, so nothing before k is recomputed.
Checkpoint step workunits of replicated chains are therefore validated by this comparison, not by
the per-workunit validator. A chain that has not reached k yet is pending; once a consensus
exists, it is compared with the canonical result when it arrives (pass ``canonical``).

Trade-off. Comparing only at checkpoints keeps the design's point (state files are uploaded only
every k-th step), at three costs: (1) a faulty host wastes up to one checkpoint interval of work,
and in a chain that is later found wrong every step since the previous checkpoint is redone;
(2) the REPORT outputs of the steps between checkpoints are not compared (a service may compare
them too, as extra evidence, since they are uploaded anyway); (3) chains advance at their hosts'
speeds, so a fast chain runs ahead on unconfirmed state and its lead is at risk until the slow
chain reaches the checkpoint. Comparing every step would need every state uploaded, which is what
sequences exist to avoid; R-fold replication costs R times the computing, as BOINC's quorum does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from apps.work.domain.states import SequenceState, ValidateState
from apps.work.domain.validation import (
    Compare,
    Init,
    ValidationCandidate,
    check_against_canonical,
    check_set,
)

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class ReplicaCheckpoint(Generic[P]):
    """One chain's result for the checkpoint step; ``result_id`` None: not reported yet."""

    sequence_id: int
    host_id: int | None
    result_id: int | None = None
    payload: P | None = None


@dataclass(frozen=True, slots=True)
class ReplicaVerdict:
    checkpoint_index: int
    canonical_sequence_id: int | None
    canonical_result_id: int | None  # its uploaded state is the agreed checkpoint state
    valid_sequence_ids: tuple[int, ...]
    invalid_sequence_ids: tuple[int, ...]  # relocate from the agreed checkpoint, on another host
    pending_sequence_ids: tuple[int, ...]  # not reported, or waiting for a quorum
    validate_error_result_ids: tuple[int, ...] = ()
    need_more_replicas: bool = False  # no consensus is coming from the chains there are


def replica_host_allowed(
    host_id: int,
    sibling_host_ids: Iterable[int | None],
    *,
    disagreed_host_ids: Iterable[int] = (),
    fresh_host_wanted: bool = False,
) -> bool:
    """Whether ``host_id`` may take a chain of a replicated sequence.

    Agreement must be independent, so never a host that holds a sibling chain or computed a
    sibling's result that still counts (``sibling_host_ids``); results found INVALID or retired
    do not count, so a host whose chain was restarted may re-run another one. Right after the
    chains disagreed (``fresh_host_wanted``: for one delay bound, like the relocation
    rule), a host that computed a result found INVALID in the group (``disagreed_host_ids``) is
    passed over too, so that a host that ran neither disagreeing chain re-runs it when there is
    one; after that the old hosts may have it, so a project with few hosts is not stuck.
    """
    if host_id in set(sibling_host_ids):
        return False
    return not (fresh_host_wanted and host_id in set(disagreed_host_ids))


def fresh_host_until(relocated_at: float | None, *, delay_bound: float) -> float | None:
    """Until when a chain that moved at ``relocated_at`` wants a host that computed no result
    found INVALID in its group: one delay bound, as relocation passes over the old host that long."""
    return None if relocated_at is None else relocated_at + delay_bound


def follow_sibling_chains(sibling_states: Iterable[SequenceState]) -> SequenceState | None:
    """What a live chain becomes because of its siblings: ERROR when one ended in ERROR (no quorum
    can form without it), ENDED when one ENDED (a quorum agreed on the final state, so the rest of
    this chain is not needed, as BOINC drops a workunit's unneeded results), else None (go on)."""
    states = set(sibling_states)
    if SequenceState.ERROR in states:
        return SequenceState.ERROR
    if SequenceState.ENDED in states:
        return SequenceState.ENDED
    return None


def _candidates(replicas: Iterable[ReplicaCheckpoint[P]]) -> list[ValidationCandidate[P]]:
    # Payloads are only None for chains that have not reported, which never get here.
    return [ValidationCandidate(r.result_id, r.payload) for r in replicas if r.result_id is not None]  # type: ignore[arg-type]


def _split_by_host(
    reported: Iterable[ReplicaCheckpoint[P]],
) -> tuple[list[ReplicaCheckpoint[P]], list[ReplicaCheckpoint[P]]]:
    """(one result per host, the rest): two results from one host are not independent."""
    seen: set[int] = set()
    voters, extras = [], []
    for r in reported:
        if r.host_id is not None and r.host_id in seen:
            extras.append(r)
        else:
            voters.append(r)
            if r.host_id is not None:
                seen.add(r.host_id)
    return voters, extras


def compare_replica_steps(
    checkpoint_index: int,
    replicas: Sequence[ReplicaCheckpoint[P]],
    *,
    min_quorum: int,
    compare: Compare[P],
    init: Init[P] | None = None,
    canonical: ReplicaCheckpoint[P] | None = None,
) -> ReplicaVerdict:
    """Which chains are valid at checkpoint ``checkpoint_index``.

    Without ``canonical``: a quorum of reported chains on distinct hosts must agree (check_set);
    a second result from the same host is only compared afterwards, never counted towards the
    quorum. With ``canonical`` (decided earlier), each reported chain is compared with it.
    """
    reported = [r for r in replicas if r.result_id is not None]
    pending = [r.sequence_id for r in replicas if r.result_id is None]
    chain_of = {r.result_id: r.sequence_id for r in reported}
    states: dict[int, ValidateState] = {}
    errors: tuple[int, ...] = ()
    if canonical is None:
        voters, rest = _split_by_host(reported)
        outcome = check_set(_candidates(voters), min_quorum=min_quorum, compare=compare, init=init)
        errors = outcome.validate_error_result_ids
        if outcome.canonical_result_id is None:
            waiting = [chain_of[r.result_id] for r in reported if r.result_id not in errors]
            return ReplicaVerdict(
                checkpoint_index,
                canonical_sequence_id=None,
                canonical_result_id=None,
                valid_sequence_ids=(),
                invalid_sequence_ids=tuple(sorted(chain_of[i] for i in errors)),
                pending_sequence_ids=tuple(sorted(pending + waiting)),
                validate_error_result_ids=errors,
                # Everyone has reported and disagrees, or too few chains are left to agree.
                need_more_replicas=not pending or outcome.n_viable + len(pending) < min_quorum,
            )
        canonical = next(r for r in voters if r.result_id == outcome.canonical_result_id)
        states.update(outcome.validate_states)
    else:
        rest = [r for r in reported if r.result_id != canonical.result_id]
    if canonical.result_id is None:
        raise ValueError("the canonical replica must have reported")
    base: ValidationCandidate[P] = ValidationCandidate(canonical.result_id, canonical.payload)  # type: ignore[arg-type]  # reported chains have payloads
    checked = check_against_canonical(base, _candidates(rest), compare=compare, init=init)
    states.update(checked.validate_states)
    invalid = {chain_of[i] for i, state in states.items() if state == ValidateState.INVALID}
    valid = {chain_of[r.result_id] for r in reported} - invalid
    return ReplicaVerdict(
        checkpoint_index,
        canonical_sequence_id=canonical.sequence_id,
        canonical_result_id=canonical.result_id,
        valid_sequence_ids=tuple(sorted(valid | {canonical.sequence_id})),
        invalid_sequence_ids=tuple(sorted(invalid)),
        pending_sequence_ids=tuple(sorted(pending)),
        validate_error_result_ids=errors + checked.validate_error_result_ids,
    )
