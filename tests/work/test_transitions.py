"""The transitioner's pure decision for one workunit (apps/work/domain/transitions.py)."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.work.domain.states import (
    EXIT_ABORTED_VIA_GUI,
    TRANSITION_NEVER,
    AssimilateState,
    ErrorMask,
    FileDeleteState,
    Outcome,
    ServerState,
    ValidateState,
)
from apps.work.domain.transitions import (
    TRANSITION_FLAG_NO_NEW_RESULTS,
    TRANSITION_FLAG_NONE,
    ResultSnapshot,
    TransitionConfig,
    TransitionPlan,
    WorkunitSnapshot,
    apply_plan,
    next_result_names,
    plan_transition,
)

NOW = 1_700_000_000.0
DAY = 86400.0


def make_wu(**fields: object) -> WorkunitSnapshot:
    base: dict[str, object] = {"id": 1, "name": "wu", "transition_time": 0}
    base.update(fields)
    return WorkunitSnapshot(**base)  # type: ignore[arg-type]


def in_progress(rid: int, deadline: float = NOW + DAY) -> ResultSnapshot:
    return ResultSnapshot(rid, f"wu_{rid}", server_state=ServerState.IN_PROGRESS, report_deadline=deadline)


def over(rid: int, outcome: Outcome, **fields: object) -> ResultSnapshot:
    r = ResultSnapshot(rid, f"wu_{rid}", server_state=ServerState.OVER, outcome=outcome)
    return replace(r, **fields)  # type: ignore[arg-type]


def unsent(rid: int) -> ResultSnapshot:
    return ResultSnapshot(rid, f"wu_{rid}")


def test_new_workunit_gets_target_nresults_results_named_from_zero() -> None:
    plan = plan_transition(make_wu(target_nresults=2, max_total_results=4), [], now=NOW)
    assert plan.new_result_names == ("wu_0", "wu_1")


def test_new_result_name_continues_after_highest_suffix() -> None:
    names = next_result_names(
        "wu", [unsent(0), replace(unsent(1), name="wu_7"), replace(unsent(2), name="x_9")], 2
    )
    assert names == ("wu_8", "wu_9")


def test_non_numeric_suffix_is_ignored_when_naming() -> None:
    assert next_result_names("wu", [replace(unsent(1), name="wu_x3")], 1) == ("wu_0",)


def test_in_progress_result_past_deadline_times_out() -> None:
    plan = plan_transition(make_wu(), [in_progress(1, NOW - 1)], now=NOW)
    assert plan.timed_out_result_ids == (1,)


def test_in_progress_result_before_deadline_is_left_alone() -> None:
    plan = plan_transition(make_wu(), [in_progress(1, NOW + 1)], now=NOW)
    assert plan.timed_out_result_ids == ()


def test_timed_out_result_is_replaced_by_a_new_instance() -> None:
    plan = plan_transition(make_wu(max_total_results=3), [in_progress(0, NOW - 1)], now=NOW)
    assert plan.new_result_names == ("wu_1",)


def test_more_errors_than_max_error_results_errors_the_workunit() -> None:
    wu = make_wu(max_error_results=1, max_total_results=5)
    results = [over(0, Outcome.CLIENT_ERROR), over(1, Outcome.CLIENT_ERROR)]
    plan = plan_transition(wu, results, now=NOW)
    assert plan.error_mask_set == ErrorMask.TOO_MANY_ERROR_RESULTS


def test_validate_error_counts_as_an_error() -> None:
    wu = make_wu(max_error_results=1, max_total_results=5)
    results = [over(0, Outcome.VALIDATE_ERROR), over(1, Outcome.CLIENT_ERROR)]
    assert plan_transition(wu, results, now=NOW).error_mask_set == ErrorMask.TOO_MANY_ERROR_RESULTS


def test_gui_abort_counts_as_no_reply_not_error() -> None:
    wu = make_wu(max_error_results=1, max_total_results=5)
    aborted = over(1, Outcome.CLIENT_ERROR, exit_status=EXIT_ABORTED_VIA_GUI)
    plan = plan_transition(wu, [over(0, Outcome.CLIENT_ERROR), aborted], now=NOW)
    assert plan.error_mask_set == ErrorMask.NONE
    assert plan.new_result_names == ("wu_2",)


def test_couldnt_send_errors_the_workunit() -> None:
    plan = plan_transition(make_wu(max_total_results=5), [over(0, Outcome.COULDNT_SEND)], now=NOW)
    assert plan.error_mask_set == ErrorMask.COULDNT_SEND_RESULT


def test_more_successes_than_max_success_results_are_left_to_the_validator() -> None:
    # Two disagreed, target went to 3, and the third is new: the validator may still find a
    # consensus; only it sets TOO_MANY_SUCCESS_RESULTS, when it does not (BOINC's split).
    wu = make_wu(min_quorum=2, target_nresults=3, max_success_results=2, max_total_results=5)
    results = [
        *(over(i, Outcome.SUCCESS, validate_state=ValidateState.INCONCLUSIVE) for i in range(2)),
        over(2, Outcome.SUCCESS),
    ]
    plan = plan_transition(wu, results, now=NOW)
    assert plan.error_mask_set == ErrorMask.NONE
    assert plan.set_need_validate is True


def test_needing_more_than_max_total_results_errors_and_creates_none() -> None:
    wu = make_wu(target_nresults=2, max_total_results=2, max_error_results=5)
    plan = plan_transition(wu, [over(0, Outcome.CLIENT_ERROR), in_progress(1)], now=NOW)
    assert plan.error_mask_set == ErrorMask.TOO_MANY_TOTAL_RESULTS
    assert plan.new_result_names == ()


def test_error_drops_unsent_results() -> None:
    wu = make_wu(error_mask=ErrorMask.CANCELLED)
    inactive = replace(unsent(1), server_state=ServerState.INACTIVE)
    assert plan_transition(wu, [unsent(0), inactive], now=NOW).didnt_need_result_ids == (0, 1)


def test_error_marks_unchecked_successes_no_check() -> None:
    wu = make_wu(error_mask=ErrorMask.CANCELLED)
    results = [
        over(0, Outcome.SUCCESS),
        over(1, Outcome.SUCCESS, validate_state=ValidateState.INCONCLUSIVE),
        over(2, Outcome.SUCCESS, validate_state=ValidateState.VALID),
    ]
    assert plan_transition(wu, results, now=NOW).no_check_result_ids == (0, 1)


def test_error_hands_the_workunit_to_the_assimilator() -> None:
    plan = plan_transition(make_wu(error_mask=ErrorMask.CANCELLED), [], now=NOW)
    assert plan.assimilate_ready is True


def test_errored_workunit_does_not_ask_for_validation() -> None:
    plan = plan_transition(make_wu(error_mask=ErrorMask.CANCELLED), [over(0, Outcome.SUCCESS)], now=NOW)
    assert plan.set_need_validate is False


def test_cancelled_property_reads_the_error_mask() -> None:
    assert make_wu(error_mask=ErrorMask.CANCELLED).cancelled is True


def test_quorum_of_successes_with_a_new_one_needs_validation() -> None:
    wu = make_wu(min_quorum=2, target_nresults=2, max_success_results=3, max_total_results=5)
    results = [over(0, Outcome.SUCCESS, validate_state=ValidateState.INCONCLUSIVE), over(1, Outcome.SUCCESS)]
    assert plan_transition(wu, results, now=NOW).set_need_validate is True


def test_below_quorum_does_not_need_validation() -> None:
    wu = make_wu(min_quorum=2, target_nresults=2, max_success_results=3, max_total_results=5)
    plan = plan_transition(wu, [over(0, Outcome.SUCCESS), in_progress(1)], now=NOW)
    assert plan.set_need_validate is False


def test_invalid_result_does_not_count_towards_quorum() -> None:
    wu = make_wu(min_quorum=2, target_nresults=2, max_success_results=3, max_total_results=5)
    results = [over(0, Outcome.SUCCESS, validate_state=ValidateState.INVALID), over(1, Outcome.SUCCESS)]
    plan = plan_transition(wu, results, now=NOW)
    assert plan.set_need_validate is False
    assert plan.new_result_names == ("wu_2",)


def test_need_validate_already_set_gives_an_empty_plan() -> None:
    wu = make_wu(need_validate=True, transition_time=math.ceil(NOW + 10.5 * DAY))
    assert plan_transition(wu, [over(0, Outcome.SUCCESS)], now=NOW).is_empty is True


def test_canonical_workunit_with_all_results_over_is_assimilated() -> None:
    wu = make_wu(canonical_result_id=0, target_nresults=2)
    results = [over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID), over(1, Outcome.NO_REPLY)]
    assert plan_transition(wu, results, now=NOW).assimilate_ready is True


def test_canonical_workunit_waits_for_unvalidated_success_before_assimilating() -> None:
    wu = make_wu(canonical_result_id=0, target_nresults=2)
    results = [over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID), over(1, Outcome.SUCCESS)]
    assert plan_transition(wu, results, now=NOW).assimilate_ready is False


def test_canonical_workunit_drops_leftover_unsent_results() -> None:
    wu = make_wu(canonical_result_id=0, assimilate_state=AssimilateState.READY)
    results = [over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID), unsent(1)]
    assert plan_transition(wu, results, now=NOW).didnt_need_result_ids == (1,)


def _assimilated(**fields: object) -> WorkunitSnapshot:
    return make_wu(canonical_result_id=0, assimilate_state=AssimilateState.DONE, **fields)


def test_file_deletion_waits_for_delete_delay() -> None:
    results = [over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID, received_time=NOW - 10)]
    plan = plan_transition(_assimilated(), results, now=NOW, config=TransitionConfig(delete_delay=60))
    assert (plan.workunit_file_delete_ready, plan.file_delete_ready_result_ids) == (False, ())
    assert plan.transition_time == math.ceil(NOW + 50)


def test_files_are_ready_for_deletion_after_delete_delay() -> None:
    results = [
        over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID, received_time=NOW - 100),
        over(1, Outcome.CLIENT_ERROR, received_time=NOW - 90),
        over(2, Outcome.NO_REPLY, report_deadline=NOW - DAY),
    ]
    plan = plan_transition(_assimilated(), results, now=NOW, config=TransitionConfig(delete_delay=60))
    assert plan.workunit_file_delete_ready is True
    assert plan.file_delete_ready_result_ids == (0, 1, 2)


def test_timed_out_results_files_are_deleted_with_a_cancelled_workunits() -> None:
    wu = make_wu(error_mask=ErrorMask.CANCELLED, assimilate_state=AssimilateState.DONE)
    results = [over(0, Outcome.NO_REPLY, report_deadline=NOW - DAY), over(1, Outcome.CLIENT_DETACHED)]
    plan = plan_transition(wu, results, now=NOW)
    assert plan.workunit_file_delete_ready is True
    assert plan.file_delete_ready_result_ids == (0, 1)


def test_timed_out_results_files_wait_while_another_result_is_in_progress() -> None:
    results = [
        over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID),
        over(1, Outcome.NO_REPLY, report_deadline=NOW - DAY),
        in_progress(2),
    ]
    plan = plan_transition(_assimilated(), results, now=NOW)
    assert plan.file_delete_ready_result_ids == ()


def test_results_never_sent_are_not_marked_for_file_deletion() -> None:
    wu = make_wu(error_mask=ErrorMask.CANCELLED, assimilate_state=AssimilateState.DONE)
    results = [over(0, Outcome.DIDNT_NEED), over(1, Outcome.COULDNT_SEND)]
    plan = plan_transition(wu, results, now=NOW)
    assert plan.workunit_file_delete_ready is True
    assert plan.file_delete_ready_result_ids == ()


def test_a_result_withdrawn_from_its_host_is_marked_for_file_deletion() -> None:
    # A relocated sequence step: DIDNT_NEED, but it had been sent (it has a deadline).
    results = [
        over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID),
        over(1, Outcome.DIDNT_NEED, report_deadline=NOW + DAY),
    ]
    plan = plan_transition(_assimilated(), results, now=NOW)
    assert plan.file_delete_ready_result_ids == (0, 1)


def test_canonical_output_waits_while_a_success_is_unchecked() -> None:
    results = [
        over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID),
        over(1, Outcome.SUCCESS, validate_state=ValidateState.VALID),
        over(2, Outcome.SUCCESS),
    ]
    plan = plan_transition(_assimilated(), results, now=NOW)
    assert plan.workunit_file_delete_ready is False
    assert plan.file_delete_ready_result_ids == (1,)


def test_transition_time_is_the_safety_net_without_deadlines() -> None:
    plan = plan_transition(make_wu(delay_bound=20 * DAY, target_nresults=0), [], now=NOW)
    assert plan.transition_time == math.ceil(NOW + 30 * DAY)


def test_safety_net_is_at_least_ten_days() -> None:
    plan = plan_transition(make_wu(delay_bound=DAY, target_nresults=0), [], now=NOW)
    assert plan.transition_time == math.ceil(NOW + 10 * DAY)


def test_transition_time_is_the_earliest_in_progress_deadline() -> None:
    wu = make_wu(target_nresults=2, max_total_results=2)
    plan = plan_transition(wu, [in_progress(0, NOW + 500.5), in_progress(1, NOW + 900)], now=NOW)
    assert plan.transition_time == math.ceil(NOW + 500.5)


def test_transition_time_is_never_once_canonical() -> None:
    wu = make_wu(canonical_result_id=0, assimilate_state=AssimilateState.READY)
    plan = plan_transition(wu, [over(0, Outcome.SUCCESS, validate_state=ValidateState.VALID)], now=NOW)
    assert plan.transition_time == TRANSITION_NEVER


def test_unchanged_transition_time_is_left_out_of_the_plan() -> None:
    wu = make_wu(transition_time=math.ceil(NOW + DAY))
    assert plan_transition(wu, [in_progress(0, NOW + DAY)], now=NOW).transition_time is None


def test_only_errors_reset_homogeneous_redundancy() -> None:
    wu = make_wu(hr_class=3, app_version_id=9, max_error_results=3, max_total_results=5)
    assert plan_transition(wu, [over(0, Outcome.CLIENT_ERROR)], now=NOW).reset_hr is True


def test_hr_class_static_keeps_homogeneous_redundancy() -> None:
    wu = make_wu(hr_class=3, max_error_results=3, max_total_results=5)
    config = TransitionConfig(hr_class_static=True)
    assert plan_transition(wu, [over(0, Outcome.CLIENT_ERROR)], now=NOW, config=config).reset_hr is False


def test_retry_gets_reliable_priority_boost() -> None:
    wu = make_wu(priority=5, max_total_results=3)
    config = TransitionConfig(reliable_priority_on_over=10)
    assert plan_transition(wu, [over(0, Outcome.NO_REPLY)], now=NOW, config=config).priority == 15


def test_boost_except_error_skips_workunits_with_errors() -> None:
    wu = make_wu(priority=5, max_total_results=3, max_error_results=3)
    config = TransitionConfig(reliable_priority_on_over_except_error=10)
    assert plan_transition(wu, [over(0, Outcome.CLIENT_ERROR)], now=NOW, config=config).priority is None


def test_no_new_results_flag_creates_none() -> None:
    wu = make_wu(transitioner_flags=TRANSITION_FLAG_NO_NEW_RESULTS, max_total_results=3)
    assert plan_transition(wu, [over(0, Outcome.NO_REPLY)], now=NOW).new_result_names == ()


def test_broadcast_workunit_is_never_transitioned() -> None:
    wu = make_wu(transitioner_flags=TRANSITION_FLAG_NONE)
    assert plan_transition(wu, [in_progress(0, NOW - 1)], now=NOW) == TransitionPlan(
        1, transition_time=TRANSITION_NEVER
    )


def test_apply_plan_creates_unsent_results_with_fresh_ids() -> None:
    wu = make_wu(target_nresults=2, max_total_results=4)
    _, results = apply_plan(
        wu, [over(7, Outcome.NO_REPLY)], plan_transition(wu, [over(7, Outcome.NO_REPLY)], now=NOW)
    )
    assert [(r.id, r.name, r.server_state) for r in results[1:]] == [
        (8, "wu_8", ServerState.UNSENT),
        (9, "wu_9", ServerState.UNSENT),
    ]


# Property: the transitioner is idempotent. Random workunits and result sets, including
# combinations the daemons never produce, must reach a fixed point after one plan.

_MASKS = [ErrorMask.NONE] * 8 + [
    ErrorMask.CANCELLED,
    ErrorMask.COULDNT_SEND_RESULT | ErrorMask.TOO_MANY_TOTAL_RESULTS,
]
_OUTCOMES = [Outcome.SUCCESS] * 4 + list(Outcome)
_VALIDATE_STATES = [ValidateState.INIT] * 4 + list(ValidateState)


@st.composite
def result_sets(draw: st.DrawFn) -> list[ResultSnapshot]:
    results = []
    for rid in range(draw(st.integers(0, 7))):
        results.append(
            ResultSnapshot(
                id=rid,
                name=draw(st.sampled_from([f"wu_{rid}", f"wu_{rid + 4}", "wu_x", "other_1"])),
                server_state=draw(st.sampled_from(ServerState)),
                outcome=draw(st.sampled_from(_OUTCOMES)),
                validate_state=draw(st.sampled_from(_VALIDATE_STATES)),
                exit_status=draw(st.sampled_from([0, 0, EXIT_ABORTED_VIA_GUI, -1])),
                report_deadline=NOW + draw(st.sampled_from([-DAY, -0.5, 0.0, 0.5, 3 * DAY])),
                received_time=NOW - draw(st.sampled_from([0.0, 30.0, DAY])),
                file_delete_state=draw(st.sampled_from(FileDeleteState)),
            )
        )
    return results


@st.composite
def workunits(draw: st.DrawFn, n_results: int) -> WorkunitSnapshot:
    return make_wu(
        min_quorum=draw(st.integers(1, 3)),
        target_nresults=draw(st.integers(0, 4)),
        max_error_results=draw(st.integers(0, 4)),
        max_total_results=draw(st.integers(1, 10)),
        max_success_results=draw(st.integers(1, 6)),
        delay_bound=draw(st.sampled_from([0.0, DAY, 7 * DAY, 30 * DAY])),
        error_mask=draw(st.sampled_from(_MASKS)),
        canonical_result_id=draw(st.sampled_from([None, None, None, 0, 1, n_results])),
        assimilate_state=draw(st.sampled_from(AssimilateState)),
        file_delete_state=draw(st.sampled_from(FileDeleteState)),
        need_validate=draw(st.booleans()),
        transition_time=draw(st.sampled_from([0, int(NOW), TRANSITION_NEVER])),
        hr_class=draw(st.integers(0, 2)),
        app_version_id=draw(st.integers(0, 2)),
        priority=draw(st.integers(0, 3)),
        transitioner_flags=draw(
            st.sampled_from([0, 0, 0, TRANSITION_FLAG_NONE, TRANSITION_FLAG_NO_NEW_RESULTS])
        ),
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[WorkunitSnapshot, list[ResultSnapshot], TransitionConfig]:
    results = draw(result_sets())
    config = TransitionConfig(
        delete_delay=draw(st.sampled_from([0.0, 60.0, 2 * DAY])),
        hr_class_static=draw(st.booleans()),
        reliable_priority_on_over=draw(st.integers(0, 2)),
        reliable_priority_on_over_except_error=draw(st.integers(0, 2)),
    )
    return draw(workunits(len(results))), results, config


@settings(max_examples=400, deadline=None)
@given(cases())
def test_applying_a_plan_then_replanning_gives_an_empty_plan(
    case: tuple[WorkunitSnapshot, list[ResultSnapshot], TransitionConfig],
) -> None:
    wu, results, config = case
    plan = plan_transition(wu, results, now=NOW, config=config)
    wu2, results2 = apply_plan(wu, results, plan)
    assert plan_transition(wu2, results2, now=NOW, config=config).is_empty is True


@settings(max_examples=200, deadline=None)
@given(cases())
def test_new_result_names_never_collide_with_existing_numbered_names(
    case: tuple[WorkunitSnapshot, list[ResultSnapshot], TransitionConfig],
) -> None:
    wu, results, config = case
    plan = plan_transition(wu, results, now=NOW, config=config)
    assert set(plan.new_result_names).isdisjoint(r.name for r in results)
