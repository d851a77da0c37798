"""Row locking shared by the credit services: rows by id in id order, host_app_versions by key.

The validator locks these once per batch, so the SELECTs are written by hand
(apps.core.db): one statement each and no ORM query building, and for wide rows only the
columns credit reads and writes (``ModelColumns`` with a field list).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Model

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
    """The host_app_versions of these keys, locked in id order (``_for_update``)."""
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
