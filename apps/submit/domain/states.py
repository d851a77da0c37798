"""BOINC's batch states (db/boinc_db_types.h), numbered as BOINC numbers them on the wire."""

from __future__ import annotations

from enum import IntEnum


class BatchState(IntEnum):
    INIT = 0
    IN_PROGRESS = 1
    COMPLETE = 2
    ABORTED = 3
    RETIRED = 4


# States in which a batch's jobs may still run and its figures still change.
OPEN_STATES = frozenset({BatchState.INIT, BatchState.IN_PROGRESS})
