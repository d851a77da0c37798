"""Why a live sequence is not moving (what the admin page and the operators' API show).

A live chain waits for one of three things:

* HOST_TO_TAKE: it is unassigned and waits for a host fast enough to take its next step; right
  after it moved, for a while only a host that computed no result found INVALID in its group
  (replicas.py: ``replica_host_allowed``);
* CHAIN_AT_CHECKPOINT: with redundancy, its next checkpoint is computed but counts only once a
  quorum of chains agreed on it, and a sibling chain has not reached it yet (named, with the host
  that holds it, or none);
* COMPARISON: every chain reached that checkpoint; the next refresh (the validator's call or the
  sequence-deadline daemon) compares them;
* HOST_TO_REPORT: its host is computing the first step without a validated result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from apps.sequences.domain.types import SequenceSnapshot
from apps.work.domain.states import SequenceState


class WaitReason(StrEnum):
    HOST_TO_TAKE = "host_to_take"
    CHAIN_AT_CHECKPOINT = "chain_at_checkpoint"
    COMPARISON = "comparison"
    HOST_TO_REPORT = "host_to_report"


@dataclass(frozen=True, slots=True)
class ChainAt:
    """A sibling chain: its name, the host holding it (None: unassigned) and whether it has a
    validated result for the checkpoint in question."""

    name: str
    host_id: int | None
    reached: bool


@dataclass(frozen=True, slots=True)
class SequenceWait:
    reason: WaitReason
    chain: str  # the chain waited for: this one, or the sibling that is behind
    step: int  # the step to take or report, or the checkpoint step
    host_id: int | None  # the host that holds that chain (None: no host yet)
    fresh_host_until: float | None = None  # HOST_TO_TAKE: hosts that erred are passed over until then

    def describe(self) -> str:
        if self.reason == WaitReason.HOST_TO_TAKE:
            text = f"waiting for a host to take step {self.step} of chain {self.chain}"
            if self.fresh_host_until is not None:
                until = datetime.fromtimestamp(self.fresh_host_until, UTC).strftime("%Y-%m-%d %H:%M UTC")
                text += f"; hosts that computed a result found invalid are passed over until {until}"
            return text
        if self.reason == WaitReason.COMPARISON:
            return f"waiting for the chains to be compared at checkpoint step {self.step}"
        host = "no host yet" if self.host_id is None else f"host {self.host_id}"
        if self.reason == WaitReason.CHAIN_AT_CHECKPOINT:
            return f"waiting at checkpoint step {self.step} for chain {self.chain} ({host}) to reach it"
        return f"waiting for {host} to report step {self.step} of chain {self.chain}"


def waiting_for(
    seq: SequenceSnapshot,
    name: str,
    *,
    unconfirmed_checkpoint: int | None = None,
    siblings: Sequence[ChainAt] = (),
    fresh_host_until: float | None = None,
    now: float,
) -> SequenceWait | None:
    """What ``seq`` (the chain called ``name``) waits for; None when it is over or has nothing left
    to wait for. ``unconfirmed_checkpoint``: its next checkpoint, computed but not yet agreed;
    ``siblings``: the other chains, whether each reached that checkpoint."""
    if seq.state not in (SequenceState.UNASSIGNED, SequenceState.ASSIGNED):
        return None
    if seq.state == SequenceState.UNASSIGNED:
        fresh = fresh_host_until if fresh_host_until is not None and fresh_host_until > now else None
        return SequenceWait(WaitReason.HOST_TO_TAKE, name, seq.first_undispatched_index, None, fresh)
    if unconfirmed_checkpoint is not None:
        behind = next((s for s in siblings if not s.reached), None)
        if behind is None:
            return SequenceWait(WaitReason.COMPARISON, name, unconfirmed_checkpoint, seq.assigned_host_id)
        return SequenceWait(
            WaitReason.CHAIN_AT_CHECKPOINT, behind.name, unconfirmed_checkpoint, behind.host_id
        )
    if seq.first_unvalidated_index >= seq.n_workunits:
        return None
    return SequenceWait(WaitReason.HOST_TO_REPORT, name, seq.first_unvalidated_index, seq.assigned_host_id)
