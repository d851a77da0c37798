"""The pure rules of targeted and broadcast jobs (no database)."""

import pytest

from apps.work.domain.assignments import (
    ResultState,
    Target,
    TargetType,
    next_result_name,
    target_from_options,
    targeted_instance_needed,
)
from apps.work.domain.states import Outcome, ServerState, ValidateState


def test_broadcast_user_option_gives_a_broadcast_to_that_user():
    assert target_from_options({"broadcast_user": 5}) == Target(TargetType.USER, 5, multi=True)


def test_no_target_option_gives_an_ordinary_job():
    assert target_from_options({"target_host": None, "broadcast": None}) is None


def test_a_target_needs_a_positive_id():
    with pytest.raises(ValueError, match="--target_team must be a positive id"):
        target_from_options({"target_team": 0})


def test_a_successful_result_not_found_invalid_fills_the_job():
    done = ResultState(ServerState.OVER, Outcome.SUCCESS, ValidateState.VALID)
    failed = ResultState(ServerState.OVER, Outcome.CLIENT_ERROR, ValidateState.INIT)
    assert targeted_instance_needed(1, [done]) is False
    assert targeted_instance_needed(1, [failed]) is True


def test_result_names_continue_after_the_highest_suffix():
    assert next_result_name("wu", ["wu_0", "wu_3", "other_9"]) == "wu_4"
    assert next_result_name("wu", []) == "wu_0"
