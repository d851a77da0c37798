"""Value types of work sequences; the rules live in rules.py."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from apps.work.domain.states import Outcome, SequenceState, ServerState, ValidateState

MIN_AHEAD = 2
_FAILED_OUTCOMES = (
    Outcome.COULDNT_SEND,
    Outcome.CLIENT_ERROR,
    Outcome.NO_REPLY,
    Outcome.VALIDATE_ERROR,
    Outcome.CLIENT_DETACHED,
)


@dataclass(frozen=True, slots=True)
class SequenceSnapshot:
    """The head record; the checkpoint fields name the state a new host restarts from."""

    id: int
    state: SequenceState = SequenceState.UNASSIGNED
    assigned_host_id: int | None = None
    max_result_time: float = 86400.0  # seconds of real time for one result
    first_unvalidated_index: int = 0
    first_undispatched_index: int = 0
    n_workunits: int = 0  # steps known so far
    ended: bool = False  # no further steps will be added
    restartable_indices: frozenset[int] = frozenset()
    last_restartable_validated_index: int | None = None  # None: restart from the start
    checkpoint_result_id: int | None = None  # the result whose uploaded state that is
    n_relocations: int = 0

    def __post_init__(self) -> None:
        # Services build these from rows; a broken head would silently skip or resend steps.
        if not 0 <= self.first_undispatched_index <= self.n_workunits:
            raise ValueError("first_undispatched_index out of range")
        if not 0 <= self.first_unvalidated_index <= self.n_workunits:
            raise ValueError("first_unvalidated_index out of range")
        if (self.state == SequenceState.ASSIGNED) != (self.assigned_host_id is not None):
            raise ValueError("a sequence has a host exactly when it is ASSIGNED")
        if self.state == SequenceState.ENDED and not self.ended:
            raise ValueError("an ENDED sequence must have ended set")


@dataclass(frozen=True, slots=True)
class SequenceStep:
    """One step workunit and its current result in the chain (``result_id`` None: none yet)."""

    index: int
    workunit_id: int
    result_id: int | None = None
    server_state: ServerState | None = None
    outcome: Outcome = Outcome.INIT
    validate_state: ValidateState = ValidateState.INIT
    report_deadline: float | None = None
    restartable: bool = False
    canonical_result_id: int | None = None  # the step workunit's canonical result

    @property
    def validated(self) -> bool:
        return self.canonical_result_id is not None

    @property
    def sendable(self) -> bool:
        return self.result_id is not None and self.server_state == ServerState.UNSENT

    def failed(self, now: float) -> bool:
        if self.server_state == ServerState.IN_PROGRESS:
            return self.report_deadline is not None and self.report_deadline < now
        if self.server_state != ServerState.OVER:
            return False
        return self.outcome in _FAILED_OUTCOMES or self.validate_state == ValidateState.INVALID


class NoticeAction(IntEnum):
    SEND_MORE = 1
    NOT_ASSIGNED = 2
    ENDED = 3
    LOST = 4


@dataclass(frozen=True, slots=True)
class SequenceNotice:
    sequence_id: int
    action: NoticeAction


class OutputFileKind(IntEnum):
    STATE = 1
    REPORT = 2


@dataclass(frozen=True, slots=True)
class OutputFileSpec:
    name: str
    kind: OutputFileKind


@dataclass(frozen=True, slots=True)
class OutputFilePlan:
    """How a step declares one output file (``<upload_when_present/>``, ``<sticky/>``)."""

    name: str
    upload: bool
    keep_on_host: bool


@dataclass(frozen=True, slots=True)
class Checkpoint:
    index: int
    state_result_id: int


@dataclass(frozen=True, slots=True)
class RelocationPlan:
    sequence: SequenceSnapshot  # the new head: UNASSIGNED, or ERROR past max_relocations
    previous_host_id: int | None
    restart_after_index: int | None  # None: from the start
    restart_state_result_id: int | None  # whose uploaded state the first re-created step reads
    recreate_step_indices: tuple[int, ...]  # each needs a new UNSENT result; validated ones re-open
    failed_step_indices: tuple[int, ...]
    didnt_need_result_ids: tuple[int, ...] = ()  # unsent results dropped on ERROR


@dataclass(frozen=True, slots=True)
class ExtendPlan:
    sequence: SequenceSnapshot
    new_step_indices: tuple[int, ...]  # create a workunit and one UNSENT result for each
    restartable_indices: frozenset[int]  # among the new steps


@dataclass(frozen=True, slots=True)
class EndPlan:
    sequence: SequenceSnapshot
    didnt_need_result_ids: tuple[int, ...]  # UNSENT -> OVER/DIDNT_NEED
    abort_result_ids: tuple[int, ...]  # in progress: ask the host to abort (result_abort)
    notify_host_id: int | None
