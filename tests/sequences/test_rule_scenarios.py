"""Work sequences: properties, and the climate and folding examples walked as scenarios."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.sequences.domain.rules import (
    NoticeAction,
    SequenceNotice,
    SequenceSnapshot,
    SequenceStep,
    assign_sequence,
    end_plan,
    extend_plan,
    host_can_take_sequence,
    missed_deadline_plan,
    needs_extension,
    reconcile_host_sequences,
    refresh_head,
    results_to_send,
)
from apps.work.domain.states import SequenceState, ServerState
from tests.sequences.rule_helpers import (
    DAY,
    DELAY,
    HOST_A,
    HOST_B,
    NOW,
    Steps,
    assigned,
    extend,
    finish,
    in_progress_indices,
    new_chain,
    recreate,
    report,
    rpc,
)

# --- properties ---------------------------------------------------------------------------------


@st.composite
def sending_cases(draw: st.DrawFn) -> tuple[SequenceSnapshot, Steps, int]:
    n = draw(st.integers(0, 12))
    first_undispatched = draw(st.integers(0, n))
    steps: Steps = []
    for i in range(n):
        if draw(st.integers(0, 9)) == 0:
            continue  # a step workunit not created yet
        state: ServerState | None
        if i < first_undispatched:
            state = draw(st.sampled_from([ServerState.IN_PROGRESS, ServerState.OVER]))
        else:
            state = draw(st.sampled_from([ServerState.UNSENT] * 5 + [None]))
        steps.append(SequenceStep(i, 100 + i, None if state is None else 1000 + i, state))
    seq = SequenceSnapshot(
        1, SequenceState.ASSIGNED, HOST_A, n_workunits=n, first_undispatched_index=first_undispatched
    )
    return seq, steps, draw(st.integers(0, 5))


def _sendable_run(seq: SequenceSnapshot, steps: Sequence[SequenceStep]) -> int:
    by_index = {s.index: s for s in steps}
    run = 0
    while (
        seq.first_undispatched_index + run in by_index
        and by_index[seq.first_undispatched_index + run].sendable
    ):
        run += 1
    return run


@settings(max_examples=300, deadline=None)
@given(sending_cases())
def test_sent_steps_are_contiguous_known_and_keep_the_host_two_ahead(
    case: tuple[SequenceSnapshot, Steps, int],
) -> None:
    seq, steps, jobs = case
    sent = results_to_send(
        seq, steps, host_id=HOST_A, requested_jobs=jobs, requested_seconds=0, est_runtime=DAY
    )
    indices = [s.index for s in sent]
    start = seq.first_undispatched_index
    assert indices == list(range(start, start + len(sent)))
    assert all(s.sendable and s.index < seq.n_workunits for s in sent)
    running = len(in_progress_indices(steps))
    if _sendable_run(seq, steps) >= 2:
        assert running + len(sent) >= 2


@st.composite
def relocation_cases(draw: st.DrawFn) -> tuple[SequenceSnapshot, Steps]:
    n = draw(st.integers(1, 15))
    seq, steps = assigned(n, every_k=draw(st.integers(0, 4)))
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW, jobs=draw(st.integers(0, n)))
    for i in range(draw(st.integers(0, seq.first_undispatched_index))):  # steps finish in order
        steps = finish(steps, i) if draw(st.booleans()) else report(steps, i)
    return seq, steps


@settings(max_examples=300, deadline=None)
@given(relocation_cases())
def test_relocation_recreates_only_steps_after_the_checkpoint_once(
    case: tuple[SequenceSnapshot, Steps],
) -> None:
    seq, steps = case
    plan = missed_deadline_plan(seq, steps, now=NOW + DELAY + 1)
    if plan is None:
        assert in_progress_indices(steps) == []
        return
    after = -1 if plan.restart_after_index is None else plan.restart_after_index
    validated_checkpoints = [s.index for s in steps if s.restartable and s.validated]
    assert after == max(validated_checkpoints, default=-1)
    assert plan.recreate_step_indices == tuple(range(after + 1, seq.first_undispatched_index))
    assert plan.sequence.first_undispatched_index == after + 1
    assert missed_deadline_plan(plan.sequence, recreate(steps, plan), now=NOW + DELAY + 1) is None


# --- the climate and folding examples -----------------------------------------------------------


def test_climate_example_sixty_steps_survive_a_vanished_host() -> None:
    """6 months in 3-day results, a full state save every 7th; host A vanishes after 20 steps."""
    seq, steps = new_chain(60, every_k=7, final=True, max_result_time=4 * DAY)
    assert host_can_take_sequence(seq, 3 * DAY) is True
    seq, now = assign_sequence(seq, HOST_A), NOW
    seq, steps, sent = rpc(seq, steps, HOST_A, now)
    assert sent == [0, 1]
    for index in range(20):  # every 3 days: report the oldest step, get one more
        now += 3 * DAY
        steps = finish(steps, index)
        seq, steps, sent = rpc(refresh_head(seq, steps), steps, HOST_A, now)
        assert sent == [index + 2]
    assert in_progress_indices(steps) == [20, 21]
    assert (seq.first_unvalidated_index, seq.last_restartable_validated_index) == (20, 13)

    now += DELAY + 1  # host A stops responding
    plan = missed_deadline_plan(seq, steps, now=now)
    assert plan is not None
    assert (plan.restart_after_index, plan.recreate_step_indices) == (13, tuple(range(14, 22)))
    assert plan.restart_state_result_id == steps[13].canonical_result_id
    seq, steps = plan.sequence, recreate(steps, plan)

    assert host_can_take_sequence(seq, 2 * DAY) is True
    seq = assign_sequence(seq, HOST_B)
    assert reconcile_host_sequences(HOST_A, [seq.id], {seq.id: seq}) == (
        SequenceNotice(seq.id, NoticeAction.NOT_ASSIGNED),
    )
    seq, steps, sent = rpc(seq, steps, HOST_B, now)
    assert sent == [14, 15]
    while seq.state == SequenceState.ASSIGNED:
        now += 2 * DAY
        steps = finish(steps, in_progress_indices(steps)[0])
        seq, steps, _ = rpc(refresh_head(seq, steps), steps, HOST_B, now)
    assert (seq.state, seq.first_unvalidated_index, seq.n_relocations) == (SequenceState.ENDED, 60, 1)
    assert reconcile_host_sequences(HOST_B, [seq.id], {seq.id: seq}) == (
        SequenceNotice(seq.id, NoticeAction.ENDED),
    )


def test_folding_example_extended_until_the_project_ends_it() -> None:
    """Unknown length, small state (every step restartable), 3 steps at a time."""
    seq, steps = new_chain(3, every_k=1, max_result_time=2 * DAY)
    seq, now = assign_sequence(seq, HOST_A), NOW
    seq, steps, sent = rpc(seq, steps, HOST_A, now)
    assert sent == [0, 1]
    for index in range(5):  # the back end extends whenever fewer than 2 steps wait
        now += DAY
        steps = finish(steps, index)
        seq = refresh_head(seq, steps)
        if needs_extension(seq, min_undispatched=2):
            seq, steps = extend(seq, steps, 3, restartable_every=1)
        seq, steps, _ = rpc(seq, steps, HOST_A, now)
    assert (seq.n_workunits, in_progress_indices(steps)) == (9, [5, 6])

    now += DELAY + 1  # host A stops responding; every validated step is a checkpoint
    plan = missed_deadline_plan(seq, steps, now=now)
    assert plan is not None
    assert (plan.restart_after_index, plan.recreate_step_indices) == (4, (5, 6))
    seq, steps = plan.sequence, recreate(steps, plan)

    seq = assign_sequence(seq, HOST_B)
    seq, steps, sent = rpc(seq, steps, HOST_B, now)
    assert sent == [5, 6]
    now += DAY
    steps = finish(steps, 5)
    seq, steps, _ = rpc(refresh_head(seq, steps), steps, HOST_B, now)

    ended = end_plan(seq, steps)  # a more promising trajectory was found
    assert ended.notify_host_id == HOST_B
    assert ended.abort_result_ids == (steps[6].result_id, steps[7].result_id)
    assert ended.didnt_need_result_ids == (steps[8].result_id,)
    seq = ended.sequence
    assert reconcile_host_sequences(HOST_B, [seq.id], {seq.id: seq}) == (
        SequenceNotice(seq.id, NoticeAction.ENDED),
    )
    with pytest.raises(ValueError, match="ended"):
        extend_plan(seq, 3)
