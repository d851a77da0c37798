"""The scheduler's hand-written SQL: statements of the scheduler RPC, named.

The rule (docs/architecture.md, "Hand-written SQL"): the RPC runs a dozen queries whose shape
never changes, and building each through the ORM cost about 1 ms of Python against 0.1 ms
for the SQL (see ``apps.core.db.ModelColumns``); an RPC's statement count is checked in
tests/scheduler/test_statements.py. Each function says why its statement is written by hand.
tests/scheduler/test_queries.py runs them against plain ORM versions on the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection

from apps.core.db import ModelColumns, WriteBatch, any_of, array_literal, fetch_rows, placeholders
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.work.domain.states import ServerState

_IN_PROGRESS = int(ServerState.IN_PROGRESS)


def project_by_slug(slug: str, columns: ModelColumns) -> Project | None:
    """The project a scheduler URL names (``columns`` of alias ``p``).

    Why SQL: it runs on every RPC; see the module docstring.
    """
    rows = fetch_rows(f"SELECT {columns.sql()} FROM projects_project p WHERE p.slug = %s", [slug])
    return columns.build(rows[0]) if rows else None


def other_results_state(project_id: int, names: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """For each named result of the project: (host id, server state, outcome, its
    workunit's error mask, canonical result id, sequence id).

    Why SQL: the tasks a host lists in every request, as one array (``any_of``), so one
    statement shape whatever their number; ``values_list`` across the join cost more in ORM
    building than the statement.
    """
    named, params = any_of("r.name", list(names), "text")
    return {
        row[0]: row[1:]
        for row in fetch_rows(
            "SELECT r.name, r.host_id, r.server_state, r.outcome, w.error_mask, w.canonical_result_id,"
            " w.sequence_id FROM work_result r JOIN work_workunit w ON w.id = r.workunit_id"
            f" WHERE r.project_id = %s AND {named}",
            [project_id, *params],
        )
    }


def host_jobs_in_progress(host_id: int) -> list[tuple[int, str]]:
    """(app id, processor type) of each of the host's results in progress.

    Why SQL: one range of the result_host_state index per RPC that has limits to apply.
    """
    return [
        (app_id, proc_type)
        for app_id, proc_type in fetch_rows(
            f"SELECT app_id, proc_type FROM work_result WHERE host_id = %s AND server_state = {_IN_PROGRESS}",
            [host_id],
        )
    ]


def apps_busy_on_host(host_id: int, app_ids: Sequence[int]) -> set[int]:
    """Those of the apps the host has a result of in progress.

    Why SQL: as ``host_jobs_in_progress``, one index range per host.
    """
    ids = list(app_ids)
    return {
        app_id
        for (app_id,) in fetch_rows(
            f"SELECT DISTINCT app_id FROM work_result WHERE host_id = %s"
            f" AND server_state = {_IN_PROGRESS} AND app_id IN ({placeholders(ids)})",
            [host_id, *ids],
        )
    }


def host_app_versions_locked(host_id: int, columns: ModelColumns) -> list[HostAppVersion]:
    """The host's host_app_version rows (``columns`` of alias ``v``), locked in id order.

    Why SQL: once per RPC; see the module docstring.
    """
    sql = f"SELECT {columns.sql()} FROM hosts_hostappversion v WHERE v.host_id = %s ORDER BY v.id"
    if connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    return [columns.build(row) for row in fetch_rows(sql, [host_id])]


def output_files_client_report(rows: Sequence[tuple[int, str, str, int]], batch: WriteBatch) -> None:
    """For each (result id, file name, md5, size) the client reported: the output file of
    that result and name, if not uploaded yet, takes the md5 and the smaller size; into
    ``batch``.

    Why SQL: joins the reported pairs to the stored rows in one statement, nothing read
    first; the ORM needs a read or an UPDATE per file. On PostgreSQL the pairs travel as
    arrays (one statement shape); elsewhere one statement run per pair.
    """
    if connection.vendor == "postgresql":
        batch.add(
            "UPDATE work_outputfile o SET md5_cksum = v.md5, nbytes = LEAST(o.nbytes, v.nbytes)"
            " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bigint[]) AS v(result_id, name, md5, nbytes)"
            " WHERE o.result_id = v.result_id AND o.name = v.name AND NOT o.uploaded",
            [array_literal(column) for column in zip(*rows, strict=True)],
            table="work_outputfile",
        )
        return
    batch.add_many(
        "UPDATE work_outputfile SET md5_cksum = %s, nbytes = MIN(nbytes, %s)"
        " WHERE result_id = %s AND name = %s AND NOT uploaded",
        [(md5, nbytes, rid, name) for rid, name, md5, nbytes in rows],
    )
