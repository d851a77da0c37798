"""Replica chains: the pure rules on who re-runs a chain and when a chain follows its siblings
(no database)."""

from __future__ import annotations

from apps.sequences.domain.rules import (
    follow_sibling_chains,
    fresh_host_until,
    replica_host_allowed,
)
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
