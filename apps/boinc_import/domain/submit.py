"""BOINC's remote-submission tables: batch, user_submit and user_submit_app."""

from __future__ import annotations

from apps.boinc_import.domain.ids import IdMap
from apps.boinc_import.domain.values import (
    Mapped,
    Row,
    RowRefused,
    deadline,
    described,
    flag,
    integer,
    number,
    unix_time,
)

BATCH_NAME_MAX = 254
BATCH_STATE_MAX = 4  # RETIRED, the last of BOINC's batch states


def _user(row: Row, users: IdMap) -> int:
    source = integer(row, "user_id")
    target = users.target(source)
    if target is None:
        raise RowRefused(f"its user {source} was not imported")
    return target


def _app(row: Row, apps: dict[int, int]) -> int:
    appid = integer(row, "app_id")
    if appid not in apps:
        raise RowRefused(f"its app {appid} was not imported")
    return apps[appid]


def batch_name(name: str, source_id: int) -> str:
    """The batch's name, or one made from its id where BOINC left it empty."""
    return name or f"batch {source_id}"


def map_batch(row: Row, *, users: IdMap, apps: dict[int, int], now: float) -> Mapped:
    notes: list[str] = []
    values = {
        "owner_id": _user(row, users),
        "app_id": _app(row, apps),
        "name": batch_name(described(row, "name", max_len=BATCH_NAME_MAX, notes=notes), integer(row, "id")),
        "description": described(row, "description", max_len=10_000, notes=notes),
        "state": integer(row, "state", hi=BATCH_STATE_MAX),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "completion_time": unix_time(row, "completion_time", now=now),
        "expire_time": deadline(row, "expire_time"),
        "est_completion_time": deadline(row, "est_completion_time"),
        "logical_start_time": number(row, "logical_start_time"),
        "logical_end_time": number(row, "logical_end_time"),
        "njobs": integer(row, "njobs"),
        "nerror_jobs": integer(row, "nerror_jobs"),
        "fraction_done": number(row, "fraction_done", hi=1.0),
        "credit_estimate": number(row, "credit_estimate"),
        "credit_canonical": number(row, "credit_canonical"),
    }
    return Mapped(values, notes)


def map_user_submit(row: Row, *, users: IdMap) -> Mapped:
    return Mapped(
        {
            "account_id": _user(row, users),
            "quota": number(row, "quota"),
            "logical_start_time": number(row, "logical_start_time"),
            "submit_all": flag(row, "submit_all"),
            "manage_all": flag(row, "manage_all"),
            "max_jobs_in_progress": integer(row, "max_jobs_in_progress"),
        }
    )


def map_user_submit_app(row: Row, *, users: IdMap, apps: dict[int, int]) -> Mapped:
    return Mapped({"account_id": _user(row, users), "app_id": _app(row, apps), "manage": flag(row, "manage")})


def workunit_batch(source_batch: int, batches: IdMap) -> int:
    """A workunit's batch: the imported batch's id; a number no imported batch has (BOINC
    projects also number their jobs' batches without batch rows) is kept as it is."""
    return batches.target(source_batch) or source_batch
