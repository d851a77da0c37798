"""BOINC's workunit and result state values (db/boinc_db_types.h, lib/common_defs.h).

Plain IntEnums so the pure domain code and the models share one definition; the
numeric values are BOINC's own, so exported rows and admin filters read the same.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag


class ServerState(IntEnum):
    INACTIVE = 1
    UNSENT = 2
    IN_PROGRESS = 4
    OVER = 5


class Outcome(IntEnum):
    INIT = 0
    SUCCESS = 1
    COULDNT_SEND = 2
    CLIENT_ERROR = 3
    NO_REPLY = 4
    DIDNT_NEED = 5
    VALIDATE_ERROR = 6
    CLIENT_DETACHED = 7


LATE_OUTCOMES = frozenset({Outcome.NO_REPLY, Outcome.CLIENT_DETACHED})


def result_open_to_its_host(server_state: int, outcome: int, *, in_sequence: bool) -> bool:
    """Whether the host a result was sent to may still upload and report it.

    While in progress; and, as BOINC ("late in arriving, but keep it anyhow"), after it
    timed out unreported, so the work can still validate and earn credit. Not a late step
    of a work sequence, which has moved on without it (relocation, docs/sequences.md).
    """
    if server_state == ServerState.IN_PROGRESS:
        return True
    return server_state == ServerState.OVER and outcome in LATE_OUTCOMES and not in_sequence


class ValidateState(IntEnum):
    INIT = 0
    VALID = 1
    INVALID = 2
    NO_CHECK = 3
    INCONCLUSIVE = 4
    TOO_LATE = 5


class ClientState(IntEnum):
    NEW = 0
    FILES_DOWNLOADING = 1
    FILES_DOWNLOADED = 2
    COMPUTE_ERROR = 3
    FILES_UPLOADING = 4
    FILES_UPLOADED = 5
    ABORTED = 6
    UPLOAD_FAILED = 7


class FileDeleteState(IntEnum):
    INIT = 0
    READY = 1
    DONE = 2
    ERROR = 3


class AssimilateState(IntEnum):
    INIT = 0
    READY = 1
    DONE = 2


class ErrorMask(IntFlag):
    NONE = 0
    COULDNT_SEND_RESULT = 1
    TOO_MANY_ERROR_RESULTS = 2
    TOO_MANY_SUCCESS_RESULTS = 4
    TOO_MANY_TOTAL_RESULTS = 8
    CANCELLED = 16
    NO_CANONICAL_RESULT = 32


class SequenceState(IntEnum):
    """State of a work sequence (docs/sequences.md); not in BOINC, which never built sequences."""

    UNASSIGNED = 0
    ASSIGNED = 1
    ENDED = 2
    ERROR = 3


# Client exit statuses the server interprets (lib/error_numbers.h, lib/common_defs.h).
EXIT_ABORTED_BY_CLIENT = 194
EXIT_ABORTED_VIA_GUI = 203
EXIT_ABORTED_BY_PROJECT = 202
EXIT_UNSTARTED_LATE = 200
ERR_DOWNLOAD = -186
ERR_UPLOAD = -187

# BOINC's "don't look" transition time (INT_MAX as a Unix time).
TRANSITION_NEVER = 2**31 - 1
