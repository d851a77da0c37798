"""The credit app's hand-written SQL: the rows credit locks and reads once per validator batch.

The rule (docs/architecture.md, "Hand-written SQL"): each statement is here because the ORM's
version cost more than the SQL for a batch (query building in Python, model instances of
wide rows, a statement per key) or could not say it; each function says which.
tests/credit/test_queries.py runs them against plain ORM versions on the same rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import date
from typing import Any, cast

from django.db import connection
from django.db.models import Field, Model

from apps.applications.models import App
from apps.core.db import ModelColumns, any_of, array_literal, fetch_rows
from apps.credit.convert import HAV_STAT_FIELDS
from apps.hosts.models import HostAppVersion

# The validator never changes the daily counter; the scheduler increments it concurrently.
HAV_VALIDATOR_FIELDS = [f for f in HAV_STAT_FIELDS if f != "n_jobs_today"]

_HAV = ModelColumns(HostAppVersion, "h")

# A host_app_version's identity: (host, app version) or, for anonymous platform, (host, None,
# resource type).
HavKey = tuple[int, int | None, str]


@functools.cache
def _all_columns(model: type[Model]) -> ModelColumns:
    return ModelColumns(model, "t")


def _for_update() -> str:
    # SQLite has no row locks (Django drops select_for_update there too): its IMMEDIATE
    # transactions hold the database's write lock from BEGIN.
    if not connection.features.has_select_for_update:
        return ""
    # NO KEY UPDATE: credit writers still wait for each other, but a scheduler RPC's commit
    # does not wait for them. The results an RPC sends name a host, an account and an app
    # version, and PostgreSQL checks those foreign keys at commit with KEY SHARE locks, which
    # FOR UPDATE blocks: an RPC waiting there for a validator's app version while holding
    # that validator's next row (an account of several hosts) would deadlock.
    return " FOR NO KEY UPDATE" if connection.features.has_select_for_no_key_update else " FOR UPDATE"


def locked_rows(
    model: type[Model], ids: Iterable[int | None], columns: ModelColumns | None = None
) -> dict[int, Any]:
    """Rows by id, locked for update in id order (the order every locker here uses).

    ``columns`` (aliased ``t``) loads only some fields; the rest are deferred.

    Why SQL: the ORM's ``select_for_update(no_key=True).only(...)`` says the same, but the
    validator runs it for five tables per batch and the query building and ``Model.__init__``
    cost more than the statements; ``any_of`` keeps one statement shape for any id count.
    """
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    cols = columns or _all_columns(model)
    quote = connection.ops.quote_name
    pk = f"{quote(cols.alias)}.{quote(model._meta.pk.column)}"
    cond, params = any_of(pk, wanted, "bigint")
    sql = (
        f"SELECT {cols.sql()} FROM {quote(model._meta.db_table)} {quote(cols.alias)} "
        f"WHERE {cond} ORDER BY {pk}{_for_update()}"
    )
    rows = [cols.build(row) for row in fetch_rows(sql, params)]
    return {row.pk: row for row in rows}


def hav_key(host_id: int, app_version_id: int | None, anonymous_proc_type: str) -> HavKey:
    return (host_id, app_version_id, "" if app_version_id else anonymous_proc_type)


def locked_havs(app: App, keys: set[HavKey]) -> dict[HavKey, HostAppVersion]:
    """The host_app_versions of these keys, locked in id order (``_for_update``).

    Why SQL: the ORM can only OR one condition per key, which at a batch's hundreds of keys
    cost several times the joined arrays used on PostgreSQL (one statement of one shape);
    SQLite, with no arrays, gets the OR list.
    """
    if not keys:
        return {}
    table = connection.ops.quote_name(HostAppVersion._meta.db_table)
    if connection.vendor == "postgresql":
        # The keys as three arrays joined to the table: one statement of one shape for any
        # number of keys (an OR per key costs several times as much at a batch's hundreds of
        # keys). The hosts' array again as an index condition, or the planner may hash the
        # whole table.
        ordered = sorted(keys, key=lambda k: (k[0], k[1] or 0, k[2]))
        sql = (
            f"SELECT {_HAV.sql()} FROM {table} h JOIN unnest(%s::bigint[], %s::bigint[], %s::varchar[]) "
            "AS k(host, version, proc) ON h.host_id = k.host AND (h.app_version_id = k.version OR "
            "(k.version IS NULL AND h.app_version_id IS NULL AND h.app_id = %s AND h.anonymous_proc_type = k.proc)) "
            f"WHERE h.host_id = ANY(%s::bigint[]) ORDER BY h.id{_for_update()} OF h"
        )
        params: list[Any] = [array_literal([k[i] for k in ordered]) for i in range(3)]
        rows = [_HAV.build(row) for row in fetch_rows(sql, [*params, app.pk, params[0]])]
        return {hav_key(h.host_id, h.app_version_id, h.anonymous_proc_type): h for h in rows}
    conds: list[str] = []
    params = []
    for host_id, version_id, proc in sorted(keys, key=lambda k: (k[0], k[1] or 0, k[2])):
        if version_id:
            conds.append("(h.host_id = %s AND h.app_version_id = %s)")
            params += [host_id, version_id]
        else:
            conds.append(
                "(h.host_id = %s AND h.app_id = %s AND h.app_version_id IS NULL AND h.anonymous_proc_type = %s)"
            )
            params += [host_id, app.pk, proc]
    sql = f"SELECT {_HAV.sql()} FROM {table} h WHERE {' OR '.join(conds)} ORDER BY h.id"
    rows = [_HAV.build(row) for row in fetch_rows(sql, params)]
    return {hav_key(h.host_id, h.app_version_id, h.anonymous_proc_type): h for h in rows}


def app_credit_rows(
    app_id: int,
    user_columns: ModelColumns,
    team_columns: ModelColumns,
    accounts: Iterable[int],
    teams: Iterable[int],
) -> tuple[list[Any], list[Any]]:
    """The app's per-app credit rows of these accounts and of these teams (``*_columns`` of
    alias ``c``, on tables with the same columns in the same order), read in one statement.

    Why SQL: ``UNION ALL`` of the two tables in one round trip, once per validator batch;
    the ORM needs a query per table.
    """
    parts: list[str] = []
    params: list[Any] = []
    for kind, (cols, owner, owners) in enumerate(
        ((user_columns, "account_id", list(accounts)), (team_columns, "team_id", list(teams)))
    ):
        if owners:
            table = connection.ops.quote_name(cols.model._meta.db_table)
            owned, owner_params = any_of(f"c.{owner}", owners, "bigint")
            parts.append(f"SELECT {kind}, {cols.sql()} FROM {table} c WHERE c.app_id = %s AND {owned}")
            params += [app_id, *owner_params]
    users: list[Any] = []
    teams_found: list[Any] = []
    for row in fetch_rows(" UNION ALL ".join(parts), params) if parts else ():
        if row[0] == 0:
            users.append(user_columns.build(row, 1))
        else:
            teams_found.append(team_columns.build(row, 1))
    return users, teams_found


def history_rows(
    day: date, columns: ModelColumns, accounts: Iterable[int], teams: Iterable[int]
) -> list[Any]:
    """The CreditHistory rows of ``day`` of these accounts or teams (``columns`` of alias
    ``h``).

    Why SQL: one statement for both kinds of owner with the rows built without
    ``Model.__init__``, once per validator batch.
    """
    model = columns.model
    conds: list[str] = []
    day_field = cast("Field[Any, Any]", model._meta.get_field("day"))
    params: list[Any] = [day_field.get_db_prep_value(day, connection)]
    for column, owners in (("account_id", list(accounts)), ("team_id", list(teams))):
        if owners:
            owned, owner_params = any_of(f"h.{column}", owners, "bigint")
            conds.append(owned)
            params += owner_params
    if not conds:
        return []
    table = connection.ops.quote_name(model._meta.db_table)
    sql = f"SELECT {columns.sql()} FROM {table} h WHERE h.day = %s AND ({' OR '.join(conds)})"
    return [columns.build(row) for row in fetch_rows(sql, params)]
