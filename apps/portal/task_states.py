"""A task's state as BOINC's pages show it (html/inc/result.inc): the filters of results.php
(the words of its Status column are apps.work.domain.result_status).

BOINC's result has no single state, only server state, outcome, validate state and client
state; its task list offers seven filters over them and one phrase per combination.
"""

from __future__ import annotations

from enum import IntEnum

from django.db.models import Q

from apps.work.domain.states import Outcome, ServerState, ValidateState


class TaskFilter(IntEnum):
    """results.php?state=N: BOINC's numbers, so links written for BOINC work here."""

    ALL = 0
    IN_PROGRESS = 1
    PENDING = 2
    INCONCLUSIVE = 3
    VALID = 4
    INVALID = 5
    ERROR = 6


FILTER_LABELS = {
    TaskFilter.ALL: "All",
    TaskFilter.IN_PROGRESS: "In progress",
    TaskFilter.PENDING: "Validation pending",
    TaskFilter.INCONCLUSIVE: "Validation inconclusive",
    TaskFilter.VALID: "Valid",
    TaskFilter.INVALID: "Invalid",
    TaskFilter.ERROR: "Error",
}

# The same names in the JSON API (?state=pending).
FILTER_NAMES = {f: f.name.lower() for f in TaskFilter}

_OVER = Q(server_state=ServerState.OVER)
_SUCCESS = _OVER & Q(outcome=Outcome.SUCCESS)
FILTERS: dict[TaskFilter, Q] = {
    TaskFilter.ALL: Q(),
    TaskFilter.IN_PROGRESS: Q(server_state=ServerState.IN_PROGRESS),
    TaskFilter.PENDING: _SUCCESS & Q(validate_state=ValidateState.INIT),
    TaskFilter.INCONCLUSIVE: _SUCCESS & Q(validate_state=ValidateState.INCONCLUSIVE),
    TaskFilter.VALID: _SUCCESS & Q(validate_state=ValidateState.VALID),
    TaskFilter.INVALID: _OVER
    & (
        Q(outcome=Outcome.VALIDATE_ERROR)
        | Q(
            outcome=Outcome.SUCCESS,
            validate_state__in=[ValidateState.INVALID, ValidateState.NO_CHECK, ValidateState.TOO_LATE],
        )
    ),
    TaskFilter.ERROR: _OVER
    & Q(outcome__in=[Outcome.CLIENT_ERROR, Outcome.NO_REPLY, Outcome.CLIENT_DETACHED]),
}
# Completed and waiting for a decision: what "pending credit" adds up.
AWAITING_VALIDATION = _SUCCESS & Q(validate_state__in=[ValidateState.INIT, ValidateState.INCONCLUSIVE])


def task_filter_parse(value: str | None) -> TaskFilter:
    """?state= as BOINC's number or this API's name; anything else shows all tasks."""
    text = (value or "").strip().lower()
    for f, name in FILTER_NAMES.items():
        if text in (name, str(int(f))):
            return f
    return TaskFilter.ALL
