"""A result's state in the words of BOINC's pages (html/inc/result.inc: state_string), for
the volunteers' task lists and the admin's results list.

BOINC's result has no single state, only server state, outcome, validate state and client
state; its pages show one phrase per combination.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from apps.work.domain.states import (
    EXIT_ABORTED_BY_PROJECT,
    EXIT_UNSTARTED_LATE,
    ClientState,
    Outcome,
    ServerState,
    ValidateState,
)

# BOINC's ERR_ABORTED_BY_PROJECT and ERR_UNSTARTED_LATE, the older spellings of the exits above.
_ERR_ABORTED_BY_PROJECT = -221
_ERR_UNSTARTED_LATE = -233


@dataclass(frozen=True, slots=True)
class TaskState:
    """The columns of a task's state, as read from its row."""

    server_state: int
    outcome: int
    validate_state: int
    client_state: int
    exit_status: int


_VALIDATED: dict[int, str] = {
    ValidateState.INIT: "Completed, waiting for validation",
    ValidateState.VALID: "Completed and validated",
    ValidateState.INVALID: "Completed, marked as invalid",
    ValidateState.NO_CHECK: "Completed, can't validate",
    ValidateState.INCONCLUSIVE: "Completed, validation inconclusive",
    ValidateState.TOO_LATE: "Completed, too late to validate",
}
_CLIENT_ERRORS: dict[int, str] = {
    ClientState.FILES_DOWNLOADING: "Error while downloading",
    ClientState.FILES_DOWNLOADED: "Error while computing",
    ClientState.COMPUTE_ERROR: "Error while computing",
    ClientState.FILES_UPLOADING: "Error while uploading",
    ClientState.ABORTED: "Aborted",
    ClientState.UPLOAD_FAILED: "Upload failed",
}
_OTHER_OUTCOMES: dict[int, str] = {
    Outcome.COULDNT_SEND: "Couldn't send",
    Outcome.NO_REPLY: "Timed out - no response",
    Outcome.DIDNT_NEED: "Didn't need",
    Outcome.VALIDATE_ERROR: "Validate error",
    Outcome.CLIENT_DETACHED: "Abandoned",
}


class ResultStateRow(Protocol):
    """Anything with a result's state columns (a model row, a serializer's instance)."""

    server_state: int
    outcome: int
    validate_state: int
    client_state: int
    exit_status: int


def task_state_of(row: ResultStateRow) -> TaskState:
    return TaskState(
        server_state=row.server_state,
        outcome=row.outcome,
        validate_state=row.validate_state,
        client_state=row.client_state,
        exit_status=row.exit_status,
    )


def task_status_text(state: TaskState) -> str:
    """BOINC's state_string(): the Status column of the task lists."""
    if state.server_state == ServerState.INACTIVE:
        return "Inactive"
    if state.server_state == ServerState.UNSENT:
        return "Unsent"
    if state.server_state == ServerState.IN_PROGRESS:
        return "In progress"
    if state.server_state != ServerState.OVER:
        return "Unknown"
    if state.outcome == Outcome.SUCCESS:
        return _VALIDATED.get(state.validate_state, "Completed")
    if state.outcome == Outcome.CLIENT_ERROR:
        if state.exit_status in (_ERR_ABORTED_BY_PROJECT, EXIT_ABORTED_BY_PROJECT):
            return "Cancelled by server"
        if state.exit_status in (_ERR_UNSTARTED_LATE, EXIT_UNSTARTED_LATE):
            return "Not started by deadline - canceled"
        return _CLIENT_ERRORS.get(state.client_state, "Error")
    return _OTHER_OUTCOMES.get(state.outcome, "Unknown")


def task_credit_pending(state: TaskState) -> bool:
    """Completed and not yet validated: the Credit column says "pending"."""
    return (
        state.server_state == ServerState.OVER
        and state.outcome == Outcome.SUCCESS
        and state.validate_state in (ValidateState.INIT, ValidateState.INCONCLUSIVE)
    )
