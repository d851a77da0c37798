"""BOINC's per-app credit (credit_user, credit_team) and its records of deleted users and hosts."""

from __future__ import annotations

from apps.boinc_import.domain.ids import IdMap
from apps.boinc_import.domain.values import (
    Mapped,
    Row,
    RowRefused,
    average_time,
    integer,
    number,
    text,
    unix_time,
)

# credit_user/credit_team.credit_type: BOINC keeps FLOPS-based credit (0) and, on a few
# projects, other kinds; Cobblestone's per-app credit is the FLOPS kind.
CREDIT_TYPE_FLOPS = 0


def map_app_credit(row: Row, *, owner: str, owners: IdMap, apps: dict[int, int], now: float) -> Mapped:
    """A credit_user (owner "userid") or credit_team (owner "teamid") row."""
    source = integer(row, owner)
    target = owners.target(source)
    if target is None:
        raise RowRefused(f"its {owner[:-2]} {source} was not imported")
    appid = integer(row, "appid")
    if appid not in apps:
        raise RowRefused(f"its app {appid} was not imported")
    values = {
        "account_id" if owner == "userid" else "team_id": target,
        "app_id": apps[appid],
        "njobs": integer(row, "njobs"),
        "total": number(row, "total"),
        "expavg": number(row, "expavg"),
        "expavg_time": average_time(row, "expavg_time", now=now),
    }
    return Mapped(values)


def map_deleted(row: Row, *, key: str, offset: int, now: float) -> Mapped:
    """A user_deleted (key "userid") or host_deleted (key "hostid") record, kept so that
    statistics sites go on dropping what was deleted before the move."""
    values = {
        key: integer(row, key) + offset,
        "cpid" if key == "userid" else "host_cpid": text(row, "public_cross_project_id", max_len=32),
        "create_time": unix_time(row, "create_time", now=now, required=True),
    }
    return Mapped(values)
