"""Work sequences: the pure rules, one behaviour per test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apps.sequences.domain.rules import (
    Checkpoint,
    NoticeAction,
    OutputFileKind,
    OutputFilePlan,
    OutputFileSpec,
    ReplicaCheckpoint,
    SequenceNotice,
    SequenceSnapshot,
    assign_sequence,
    compare_replica_steps,
    end_plan,
    extend_plan,
    has_failed_step,
    host_can_take_sequence,
    is_restartable,
    mark_dispatched,
    max_sequence_jobs,
    missed_deadline_plan,
    needs_extension,
    plan_output_files,
    reconcile_host_sequences,
    refresh_head,
    relocation_plan,
    replica_host_allowed,
    results_to_send,
)
from apps.work.domain.states import Outcome, SequenceState, ServerState, ValidateState
from apps.work.domain.validation import bitwise_equal
from tests.sequences.rule_helpers import (
    DAY,
    DELAY,
    HOST_A,
    HOST_B,
    NOW,
    Steps,
    assigned,
    finish,
    new_chain,
    recreate,
    rpc,
)

# --- sending ------------------------------------------------------------------------------------


def test_host_asking_for_one_job_still_gets_two_steps_ahead() -> None:
    seq, steps = assigned(5)
    _, _, sent = rpc(seq, steps, HOST_A, NOW, jobs=1)
    assert sent == [0, 1]


def test_host_asking_for_nothing_is_topped_up_to_two() -> None:
    seq, steps = assigned(5)
    _, _, sent = rpc(seq, steps, HOST_A, NOW, jobs=0)
    assert sent == [0, 1]


def test_larger_request_sends_more_steps() -> None:
    seq, steps = assigned(5)
    _, _, sent = rpc(seq, steps, HOST_A, NOW, jobs=4)
    assert sent == [0, 1, 2, 3]


def test_requested_seconds_are_converted_to_whole_results() -> None:
    seq, steps = assigned(9)
    sent = results_to_send(
        seq, steps, host_id=HOST_A, requested_jobs=0, requested_seconds=2.5 * DAY, est_runtime=DAY
    )
    assert [s.index for s in sent] == [0, 1, 2]


def test_host_already_two_ahead_gets_only_what_it_asks() -> None:
    seq, steps = assigned(5)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    _, _, sent = rpc(seq, steps, HOST_A, NOW, jobs=0)
    assert sent == []


def test_no_step_is_sent_after_a_step_failed_on_the_host() -> None:
    seq, steps = assigned(10)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    steps[0] = replace(steps[0], server_state=ServerState.OVER, outcome=Outcome.CLIENT_ERROR)
    assert has_failed_step(seq, steps) is True
    assert (
        results_to_send(seq, steps, host_id=HOST_A, requested_jobs=5, requested_seconds=0, est_runtime=DAY)
        == ()
    )


def test_a_step_invalid_on_the_host_stops_sending_too() -> None:
    seq, steps = assigned(10)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    steps[1] = replace(steps[1], server_state=ServerState.OVER, validate_state=ValidateState.INVALID)
    assert has_failed_step(seq, steps) is True


def test_a_late_step_still_running_does_not_stop_sending() -> None:
    seq, steps = assigned(10)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    steps = [replace(s, report_deadline=NOW - DAY) if s.report_deadline else s for s in steps]
    assert has_failed_step(seq, steps) is False


def test_other_host_gets_nothing_from_an_assigned_sequence() -> None:
    seq, steps = assigned(5)
    _, _, sent = rpc(seq, steps, HOST_B, NOW, jobs=3)
    assert sent == []


def test_sending_stops_at_a_step_without_an_unsent_result() -> None:
    seq, steps = assigned(5)
    steps[2] = replace(steps[2], result_id=None, server_state=None)
    _, _, sent = rpc(seq, steps, HOST_A, NOW, jobs=5)
    assert sent == [0, 1]


def test_sending_never_goes_beyond_known_steps() -> None:
    seq, steps = assigned(3)
    _, _, sent = rpc(seq, steps, HOST_A, NOW, jobs=10)
    assert sent == [0, 1, 2]


def test_mix_cap_limits_the_request_but_not_the_two_ahead_floor() -> None:
    seq, steps = assigned(9)
    sent = results_to_send(
        seq, steps, host_id=HOST_A, requested_jobs=6, requested_seconds=0, est_runtime=DAY, max_jobs=0
    )
    assert [s.index for s in sent] == [0, 1]


def test_mark_dispatched_advances_first_undispatched() -> None:
    seq, steps = assigned(5)
    seq, _, _ = rpc(seq, steps, HOST_A, NOW, jobs=3)
    assert seq.first_undispatched_index == 3


def test_mark_dispatched_refuses_a_skipped_index() -> None:
    seq, steps = assigned(5)
    with pytest.raises(ValueError, match="in order"):
        mark_dispatched(seq, [steps[1]])


# --- assignment and reconciliation --------------------------------------------------------------


def test_fast_enough_host_can_take_an_unassigned_sequence() -> None:
    seq, _ = new_chain(3, max_result_time=2 * DAY)
    assert host_can_take_sequence(seq, 2 * DAY) is True


def test_host_too_slow_for_max_result_time_cannot_take_it() -> None:
    seq, _ = new_chain(3, max_result_time=2 * DAY)
    assert host_can_take_sequence(seq, 2 * DAY + 1) is False


def test_assigned_sequence_cannot_be_taken_by_another_host() -> None:
    seq, _ = assigned(3)
    assert host_can_take_sequence(seq, 1.0) is False


def test_assigning_an_assigned_sequence_is_refused() -> None:
    seq, _ = assigned(3)
    with pytest.raises(ValueError, match="not unassigned"):
        assign_sequence(seq, HOST_B)


def test_head_without_host_cannot_be_assigned_state() -> None:
    with pytest.raises(ValueError, match="ASSIGNED"):
        SequenceSnapshot(1, state=SequenceState.ASSIGNED)


def test_reconcile_tells_each_reported_sequence_what_it_is() -> None:
    mine, _ = assigned(3, seq_id=1)
    elsewhere, _ = assigned(3, host=HOST_B, seq_id=2)
    done = replace(new_chain(1, seq_id=3, final=True)[0], state=SequenceState.ENDED)
    notices = reconcile_host_sequences(HOST_A, [3, 2, 1, 4], {1: mine, 2: elsewhere, 3: done})
    assert notices == (
        SequenceNotice(1, NoticeAction.SEND_MORE),
        SequenceNotice(2, NoticeAction.NOT_ASSIGNED),
        SequenceNotice(3, NoticeAction.ENDED),
        SequenceNotice(4, NoticeAction.NOT_ASSIGNED),
    )


def test_assigned_sequence_the_host_does_not_report_is_lost() -> None:
    mine, _ = assigned(3, seq_id=7)
    assert reconcile_host_sequences(HOST_A, [], {7: mine}) == (SequenceNotice(7, NoticeAction.LOST),)


# --- output files -------------------------------------------------------------------------------


def test_every_seventh_of_sixty_steps_and_the_last_are_restartable() -> None:
    got = [i for i in range(60) if is_restartable(i, 7, last_index=59)]
    assert got == [6, 13, 20, 27, 34, 41, 48, 55, 59]


def test_zero_every_k_means_only_the_last_step_restarts() -> None:
    assert [i for i in range(5) if is_restartable(i, 0, last_index=4)] == [4]


FILES = (OutputFileSpec("state", OutputFileKind.STATE), OutputFileSpec("report", OutputFileKind.REPORT))


def test_ordinary_step_keeps_state_on_host_and_uploads_report() -> None:
    assert plan_output_files(FILES, restartable=False, final=False) == (
        OutputFilePlan("state", upload=False, keep_on_host=True),
        OutputFilePlan("report", upload=True, keep_on_host=False),
    )


def test_restartable_step_uploads_state_and_keeps_it() -> None:
    assert plan_output_files(FILES, restartable=True, final=False)[0] == OutputFilePlan(
        "state", upload=True, keep_on_host=True
    )


def test_final_step_uploads_state_without_keeping_it() -> None:
    assert plan_output_files(FILES, restartable=True, final=True)[0] == OutputFilePlan(
        "state", upload=True, keep_on_host=False
    )


# --- head, relocation ---------------------------------------------------------------------------


def _ran(n: int, finished: int, every_k: int = 3) -> tuple[SequenceSnapshot, Steps]:
    """An assigned chain whose first ``finished`` steps are validated, two more in progress."""
    seq, steps = assigned(n, every_k=every_k)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW, jobs=finished + 2)
    for i in range(finished):
        steps = finish(steps, i)
    return refresh_head(seq, steps), steps


def test_refresh_head_finds_first_unvalidated_and_checkpoint() -> None:
    seq, _ = _ran(10, finished=7)
    assert (seq.first_unvalidated_index, seq.last_restartable_validated_index) == (7, 5)


def test_missed_deadline_restarts_after_the_last_validated_checkpoint() -> None:
    seq, steps = _ran(10, finished=7)
    plan = missed_deadline_plan(seq, steps, now=NOW + DELAY + 1)
    assert plan is not None
    assert (plan.restart_after_index, plan.recreate_step_indices) == (5, (6, 7, 8))
    assert (plan.sequence.state, plan.sequence.first_undispatched_index) == (SequenceState.UNASSIGNED, 6)
    assert (plan.previous_host_id, plan.restart_state_result_id) == (HOST_A, steps[5].canonical_result_id)


def test_relocation_reopens_the_validated_steps_after_the_restart_point() -> None:
    seq, steps = _ran(10, finished=2)  # steps 0 and 1 validated, no checkpoint (step 2) yet
    plan = missed_deadline_plan(seq, steps, now=NOW + DELAY + 1)
    assert plan is not None
    assert (plan.sequence.first_unvalidated_index, plan.sequence.first_undispatched_index) == (0, 0)


def test_relocation_after_a_checkpoint_keeps_the_steps_up_to_it_validated() -> None:
    seq, steps = _ran(10, finished=7)
    plan = missed_deadline_plan(seq, steps, now=NOW + DELAY + 1)
    assert plan is not None
    assert plan.sequence.first_unvalidated_index == 6


def test_no_missed_deadline_means_no_plan() -> None:
    seq, steps = _ran(10, finished=7)
    assert missed_deadline_plan(seq, steps, now=NOW + DELAY - 1) is None


def test_without_a_validated_checkpoint_the_sequence_restarts_from_the_start() -> None:
    seq, steps = _ran(10, finished=2)
    plan = missed_deadline_plan(seq, steps, now=NOW + DELAY + 1)
    assert plan is not None
    assert (plan.restart_after_index, plan.recreate_step_indices) == (None, (0, 1, 2, 3))


def test_client_error_on_a_step_relocates_the_sequence() -> None:
    seq, steps = _ran(10, finished=3)
    steps[3] = replace(steps[3], server_state=ServerState.OVER, outcome=Outcome.CLIENT_ERROR)
    plan = missed_deadline_plan(seq, steps, now=NOW)
    assert plan is not None
    assert plan.failed_step_indices == (3,)


def test_failure_at_or_before_the_checkpoint_is_ignored() -> None:
    seq, steps = _ran(10, finished=6)
    steps = [replace(s, report_deadline=NOW + 10 * DELAY) for s in steps]
    steps[1] = replace(steps[1], validate_state=ValidateState.INVALID)
    assert missed_deadline_plan(seq, steps, now=NOW + DELAY + 1) is None


def test_second_daemon_pass_after_relocation_does_nothing() -> None:
    seq, steps = _ran(10, finished=7)
    plan = missed_deadline_plan(seq, steps, now=NOW + DELAY + 1)
    assert plan is not None
    assert missed_deadline_plan(plan.sequence, recreate(steps, plan), now=NOW + DELAY + 1) is None


def test_too_many_relocations_put_the_sequence_in_error() -> None:
    seq, steps = _ran(10, finished=1)
    plan = missed_deadline_plan(replace(seq, n_relocations=2), steps, now=NOW + DELAY + 1, max_relocations=2)
    assert plan is not None
    assert (plan.sequence.state, plan.recreate_step_indices) == (SequenceState.ERROR, ())
    assert plan.didnt_need_result_ids == tuple(s.result_id for s in steps[3:])


def test_adopted_checkpoint_from_a_replica_moves_the_restart_point() -> None:
    seq, steps = _ran(10, finished=4)
    plan = relocation_plan(seq, steps, now=NOW, checkpoint=Checkpoint(4, state_result_id=999))
    assert (plan.restart_after_index, plan.restart_state_result_id, plan.recreate_step_indices) == (
        4,
        999,
        (5,),
    )


def test_relocating_an_ended_sequence_only_refreshes_it() -> None:
    seq, steps = assigned(2, final=True)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    steps = finish(finish(steps, 0), 1)
    plan = relocation_plan(seq, steps, now=NOW)
    assert (plan.sequence.state, plan.recreate_step_indices) == (SequenceState.ENDED, ())


def test_checkpoint_never_moves_backwards() -> None:
    seq, steps = _ran(10, finished=2)
    head = refresh_head(replace(seq, last_restartable_validated_index=5, checkpoint_result_id=42), steps)
    assert (head.last_restartable_validated_index, head.checkpoint_result_id) == (5, 42)


def test_ended_sequence_with_every_step_validated_ends() -> None:
    seq, steps = assigned(2, final=True)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    head = refresh_head(seq, finish(finish(steps, 0), 1))
    assert (head.state, head.assigned_host_id) == (SequenceState.ENDED, None)


# --- extension, ending, sequence mix ------------------------------------------------------------


def test_extension_appends_steps_after_the_known_ones() -> None:
    seq, _ = new_chain(3, every_k=2)
    plan = extend_plan(seq, 3, restartable_every=2)
    assert (plan.new_step_indices, plan.restartable_indices, plan.sequence.n_workunits) == (
        (3, 4, 5),
        frozenset({3, 5}),
        6,
    )


def test_final_extension_ends_the_sequence_with_a_restartable_last_step() -> None:
    seq, _ = new_chain(3)
    plan = extend_plan(seq, 1, final=True)
    assert (plan.sequence.ended, plan.restartable_indices) == (True, frozenset({3}))


def test_ended_sequence_cannot_be_extended() -> None:
    seq, _ = new_chain(3, final=True)
    with pytest.raises(ValueError, match="ended"):
        extend_plan(seq, 1)


def test_sequence_running_low_needs_extension() -> None:
    seq, steps = assigned(3)
    seq, _, _ = rpc(seq, steps, HOST_A, NOW)
    assert needs_extension(seq, min_undispatched=2) is True


def test_ended_sequence_never_needs_extension() -> None:
    seq, _ = new_chain(3, final=True)
    assert needs_extension(seq, min_undispatched=10) is False


def test_end_plan_drops_unsent_steps_and_aborts_running_ones() -> None:
    seq, steps = assigned(4)
    seq, steps, _ = rpc(seq, steps, HOST_A, NOW)
    plan = end_plan(seq, steps)
    assert (plan.didnt_need_result_ids, plan.abort_result_ids) == (
        (steps[2].result_id, steps[3].result_id),
        (steps[0].result_id, steps[1].result_id),
    )


def test_end_plan_deassigns_and_names_the_host_to_notify() -> None:
    seq, steps = assigned(4)
    plan = end_plan(seq, steps)
    assert (plan.sequence.state, plan.sequence.assigned_host_id, plan.notify_host_id) == (
        SequenceState.ENDED,
        None,
        HOST_A,
    )


def test_fraction_bound_caps_sequence_jobs() -> None:
    cap = max_sequence_jobs(host_sequence_jobs=2, host_total_jobs=6, requested_jobs=4, max_fraction=0.5)
    assert cap == 3


def test_count_bound_caps_sequence_jobs() -> None:
    assert max_sequence_jobs(host_sequence_jobs=2, host_total_jobs=6, requested_jobs=4, max_count=3) == 1


def test_sequence_job_cap_is_never_negative() -> None:
    assert max_sequence_jobs(host_sequence_jobs=5, host_total_jobs=5, requested_jobs=1, max_fraction=0.1) == 0


def test_no_bound_means_no_cap() -> None:
    assert max_sequence_jobs(host_sequence_jobs=5, host_total_jobs=5, requested_jobs=1) is None


# --- redundancy: replica chains compared at checkpoints -----------------------------------------


def test_agreeing_chains_are_valid_with_the_first_as_canonical() -> None:
    replicas = [ReplicaCheckpoint(1, HOST_A, 101, b"s"), ReplicaCheckpoint(2, HOST_B, 201, b"s")]
    verdict = compare_replica_steps(6, replicas, min_quorum=2, compare=bitwise_equal)
    assert (verdict.canonical_sequence_id, verdict.canonical_result_id, verdict.valid_sequence_ids) == (
        1,
        101,
        (1, 2),
    )


def test_chain_disagreeing_with_the_quorum_is_invalid() -> None:
    replicas = [
        ReplicaCheckpoint(1, 1, 101, b"bad"),
        ReplicaCheckpoint(2, 2, 201, b"s"),
        ReplicaCheckpoint(3, 3, 301, b"s"),
    ]
    verdict = compare_replica_steps(6, replicas, min_quorum=2, compare=bitwise_equal)
    assert (verdict.valid_sequence_ids, verdict.invalid_sequence_ids) == ((2, 3), (1,))


def test_chain_not_at_the_checkpoint_yet_is_pending() -> None:
    replicas = [ReplicaCheckpoint(1, 1, 101, b"s"), ReplicaCheckpoint(2, 2)]
    verdict = compare_replica_steps(6, replicas, min_quorum=2, compare=bitwise_equal)
    assert (verdict.canonical_sequence_id, verdict.pending_sequence_ids, verdict.need_more_replicas) == (
        None,
        (1, 2),
        False,
    )


def test_unreachable_quorum_needs_another_replica() -> None:
    replicas = [ReplicaCheckpoint(1, 1, 101, b"a"), ReplicaCheckpoint(2, 2, 201, b"b")]
    assert compare_replica_steps(6, replicas, min_quorum=2, compare=bitwise_equal).need_more_replicas is True


def test_two_chains_on_one_host_do_not_make_a_quorum() -> None:
    replicas = [ReplicaCheckpoint(1, HOST_A, 101, b"s"), ReplicaCheckpoint(2, HOST_A, 201, b"s")]
    assert compare_replica_steps(6, replicas, min_quorum=2, compare=bitwise_equal).canonical_result_id is None


def test_late_chain_is_compared_with_the_canonical_checkpoint() -> None:
    canonical = ReplicaCheckpoint(1, 1, 101, b"s")
    replicas = [canonical, ReplicaCheckpoint(2, 2, 201, b"s"), ReplicaCheckpoint(3, 3, 301, b"x")]
    verdict = compare_replica_steps(6, replicas, min_quorum=2, compare=bitwise_equal, canonical=canonical)
    assert (verdict.valid_sequence_ids, verdict.invalid_sequence_ids) == ((1, 2), (3,))


def test_host_may_hold_only_one_replica_chain() -> None:
    assert (replica_host_allowed(HOST_A, [HOST_B, None]), replica_host_allowed(HOST_A, [HOST_A])) == (
        True,
        False,
    )
