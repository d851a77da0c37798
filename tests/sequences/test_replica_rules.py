"""Replica chains: the pure rules on who re-runs a chain, when a chain follows its siblings, and
what a sequence waits for (no database)."""

from __future__ import annotations

from apps.sequences.domain.rules import (
    SequenceSnapshot,
    follow_sibling_chains,
    fresh_host_until,
    replica_host_allowed,
)
from apps.sequences.domain.waiting import ChainAt, WaitReason, waiting_for
from apps.work.domain.states import SequenceState
from tests.sequences.rule_helpers import DAY, HOST_A, HOST_B, NOW

HOST_C = 3


def test_a_host_whose_results_were_found_invalid_waits_while_a_fresh_host_is_wanted() -> None:
    assert (
        replica_host_allowed(HOST_A, [HOST_C], disagreed_host_ids=[HOST_A], fresh_host_wanted=True) is False
    )


def test_a_host_that_ran_neither_disagreeing_chain_may_take_the_re_run() -> None:
    assert replica_host_allowed(HOST_B, [HOST_C], disagreed_host_ids=[HOST_A], fresh_host_wanted=True) is True


def test_after_the_wait_a_host_that_erred_may_take_the_re_run() -> None:
    assert (
        replica_host_allowed(HOST_A, [HOST_C], disagreed_host_ids=[HOST_A], fresh_host_wanted=False) is True
    )


def test_a_fresh_host_is_wanted_for_one_delay_bound_after_the_move() -> None:
    assert (fresh_host_until(NOW, delay_bound=3 * DAY), fresh_host_until(None, delay_bound=3 * DAY)) == (
        NOW + 3 * DAY,
        None,
    )


def test_a_chain_follows_a_sibling_into_error_before_an_ended_one() -> None:
    assert follow_sibling_chains([SequenceState.ENDED, SequenceState.ERROR]) == SequenceState.ERROR


def test_a_chain_ends_when_a_sibling_ended() -> None:
    assert follow_sibling_chains([SequenceState.ENDED, SequenceState.ASSIGNED]) == SequenceState.ENDED


def test_a_chain_with_live_siblings_goes_on() -> None:
    assert follow_sibling_chains([SequenceState.ASSIGNED, SequenceState.UNASSIGNED]) is None


def _chain(**kw: object) -> SequenceSnapshot:
    return SequenceSnapshot(id=1, n_workunits=6, **kw)  # type: ignore[arg-type]


def test_an_unassigned_chain_waits_for_a_host_to_take_its_next_step() -> None:
    wait = waiting_for(_chain(), "r", fresh_host_until=NOW + DAY, now=NOW)
    assert wait is not None
    assert (wait.reason, wait.chain, wait.step, wait.host_id) == (WaitReason.HOST_TO_TAKE, "r", 0, None)
    assert "passed over until" in wait.describe()


def test_a_chain_at_an_unconfirmed_checkpoint_waits_for_the_sibling_behind() -> None:
    seq = _chain(state=SequenceState.ASSIGNED, assigned_host_id=HOST_A, first_unvalidated_index=2)
    siblings = [ChainAt("r_r1", HOST_B, reached=True), ChainAt("r_r2", None, reached=False)]
    wait = waiting_for(seq, "r", unconfirmed_checkpoint=2, siblings=siblings, now=NOW)
    assert wait is not None
    assert wait.describe() == "waiting at checkpoint step 2 for chain r_r2 (no host yet) to reach it"


def test_a_checkpoint_every_chain_reached_waits_for_the_comparison() -> None:
    seq = _chain(state=SequenceState.ASSIGNED, assigned_host_id=HOST_A, first_unvalidated_index=2)
    wait = waiting_for(seq, "r", unconfirmed_checkpoint=2, siblings=[ChainAt("r_r1", HOST_B, True)], now=NOW)
    assert wait is not None
    assert wait.reason == WaitReason.COMPARISON


def test_an_ended_chain_waits_for_nothing() -> None:
    assert waiting_for(_chain(state=SequenceState.ENDED, ended=True), "r", now=NOW) is None
