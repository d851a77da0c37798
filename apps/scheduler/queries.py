"""The scheduler's hand-written SQL: statements of the scheduler RPC, named.

The rule (docs/architecture.md, "Hand-written SQL"): the RPC runs a dozen queries whose shape
never changes, and building each through the ORM cost about 1 ms of Python against 0.1 ms
for the SQL (see ``apps.core.db.ModelColumns``); an RPC's statement count is checked in
tests/scheduler/test_statements.py. Each function says why its statement is written by hand.
tests/scheduler/test_queries.py runs them against plain ORM versions on the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from apps.core.db import ModelColumns, WriteBatch, any_of, array_literal, execute, fetch_rows, placeholders
from apps.hosts.models import Host, HostAppVersion, HostCoproc
from apps.projects.models import Project
from apps.volunteers.models import Account, Team
from apps.work.domain.assignments import TargetType
from apps.work.domain.states import FileDeleteState, Outcome, ServerState, ValidateState
from apps.work.models import OutputFile, Workunit, WorkunitFileRef

_IN_PROGRESS = int(ServerState.IN_PROGRESS)


def project_by_slug(slug: str, columns: ModelColumns) -> Project | None:
    """The project a scheduler URL names (``columns`` of alias ``p``).

    Why SQL: it runs on every RPC; see the module docstring.
    """
    rows = fetch_rows(f"SELECT {columns.sql()} FROM projects_project p WHERE p.slug = %s", [slug])
    return columns.build(rows[0]) if rows else None


# The request's account, its team, and the host it names, read together at the RPC's start.
_ACCOUNT = ModelColumns(Account, "a")
_TEAM = ModelColumns(Team, "t")
_HOST = ModelColumns(Host, "h")
_COPROC = ModelColumns(HostCoproc, "c")


def _account_key(account_id: int | None, authenticator: str) -> tuple[str, Any]:
    # A weak key names its account by id (its key is checked by the caller).
    return ("a.id = %s", account_id) if account_id is not None else ("a.authenticator = %s", authenticator)


def _account_and_team(row: Sequence[Any]) -> Account:
    account: Account = _ACCOUNT.build(row)
    account.team = _TEAM.build(row, _ACCOUNT.width) if account.team_id else None
    return account


def account_by_key(project_id: int, *, account_id: int | None, authenticator: str) -> Account | None:
    """The project's account with id ``account_id`` (when given) or else with this
    authenticator, its team loaded as ``account.team``; or None.

    Why SQL: the first statement of every RPC, the account and its team in one join; see the
    module docstring.
    """
    where, key = _account_key(account_id, authenticator)
    rows = fetch_rows(
        f"SELECT {_ACCOUNT.sql()}, {_TEAM.sql()} FROM volunteers_account a"
        " LEFT JOIN volunteers_team t ON t.id = a.team_id"
        f" WHERE a.project_id = %s AND {where}",
        [project_id, key],
    )
    return _account_and_team(rows[0]) if rows else None


def account_by_key_with_host(
    project_id: int, host_id: int, *, account_id: int | None, authenticator: str
) -> tuple[Account, Host | None, list[HostCoproc]] | None:
    """As ``account_by_key``, with the host ``host_id`` if it is this account's in this
    project (else None) and that host's coprocessor rows; or None without the account.

    Why SQL: an RPC naming its host reads account, team, host and coprocessors in one
    statement (one row per coprocessor) instead of three; see the module docstring.
    """
    where, key = _account_key(account_id, authenticator)
    rows = fetch_rows(
        f"SELECT {_ACCOUNT.sql()}, {_TEAM.sql()}, {_HOST.sql()}, {_COPROC.sql()}"
        " FROM volunteers_account a LEFT JOIN volunteers_team t ON t.id = a.team_id"
        " LEFT JOIN hosts_host h ON h.id = %s AND h.account_id = a.id AND h.project_id = a.project_id"
        " LEFT JOIN hosts_hostcoproc c ON c.host_id = h.id"
        f" WHERE a.project_id = %s AND {where}",
        [host_id, project_id, key],
    )
    if not rows:
        return None
    at = _ACCOUNT.width + _TEAM.width
    host = _HOST.build(rows[0], at) if rows[0][at] is not None else None
    at += _HOST.width
    return _account_and_team(rows[0]), host, [_COPROC.build(row, at) for row in rows if row[at] is not None]


def host_coprocs(host_id: int) -> list[HostCoproc]:
    """The host's coprocessor rows.

    Why SQL: read on an RPC whose account lookup did not bring them; see the module
    docstring.
    """
    return [
        _COPROC.build(row)
        for row in fetch_rows(
            f"SELECT {_COPROC.sql()} FROM hosts_hostcoproc c WHERE c.host_id = %s", [host_id]
        )
    ]


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


def file_refs_with_inputs(
    workunit_ids: Sequence[int], ref_columns: ModelColumns, input_columns: ModelColumns
) -> list[WorkunitFileRef]:
    """The workunits' input-file references (``ref_columns`` of alias ``fr``), each with its
    input file (``input_columns`` of alias ``f``) loaded, by ordinal and id.

    Why SQL: once per RPC that sends work; see the module docstring.
    """
    of_workunits, params = any_of("fr.workunit_id", list(workunit_ids), "bigint")
    refs = []
    for row in fetch_rows(
        f"SELECT {ref_columns.sql()}, {input_columns.sql()} FROM work_workunitfileref fr"
        f" JOIN work_inputfile f ON f.id = fr.file_id WHERE {of_workunits} ORDER BY fr.ordinal, fr.id",
        params,
    ):
        ref = ref_columns.build(row)
        ref.file = input_columns.build(row, ref_columns.width)
        refs.append(ref)
    return refs


def output_files_of_results(result_ids: Sequence[int], columns: ModelColumns) -> list[OutputFile]:
    """The results' output files (``columns`` of alias ``o``), by ordinal and id.

    Why SQL: once per RPC that sends work; see the module docstring.
    """
    of_results, params = any_of("o.result_id", list(result_ids), "bigint")
    return [
        columns.build(row)
        for row in fetch_rows(
            f"SELECT {columns.sql()} FROM work_outputfile o WHERE {of_results} ORDER BY o.ordinal, o.id",
            params,
        )
    ]


# Assigned work. A targeted job counts its results still open or valid.
_OPEN_STATES = ", ".join(
    str(int(s)) for s in (ServerState.INACTIVE, ServerState.UNSENT, ServerState.IN_PROGRESS)
)


def assignments_for_host(
    project_id: int, host_id: int, account_id: int, team_id: int | None, limit: int
) -> list[tuple[int, int, bool, int | None]]:
    """(assignment id, workunit id, broadcast, workunit id or None if purged) of up to
    ``limit`` of the project's assignments to all hosts, this host, its user or its team,
    in assignment order, whose workunit the host has no result of and that still needs one
    (or is gone).

    Why SQL: the ORM would spend longer building it, with its OR of targets and counting
    subquery, than the database running it, on every RPC.
    """
    return fetch_rows(
        "SELECT a.id, a.workunit_id, a.multi, w.id FROM work_assignment a"
        " LEFT JOIN work_workunit w ON w.id = a.workunit_id"
        f" WHERE a.project_id = %s AND (a.target_type = {int(TargetType.NONE)}"
        f" OR (a.target_type = {int(TargetType.HOST)} AND a.target_id = %s)"
        f" OR (a.target_type = {int(TargetType.USER)} AND a.target_id = %s)"
        f" OR (a.target_type = {int(TargetType.TEAM)} AND a.target_id = %s))"
        " AND (w.id IS NULL OR (w.error_mask = 0 AND w.canonical_result_id IS NULL AND NOT w.need_validate"
        " AND NOT EXISTS (SELECT 1 FROM work_result r WHERE r.workunit_id = w.id AND r.host_id = %s)"
        # A targeted job whose results are all out is left out here, or a few hundred of them
        # would fill the LIMIT and hide jobs still open (targeted_instance_needed's count).
        " AND (a.multi OR w.target_nresults > (SELECT COUNT(*) FROM work_result r WHERE r.workunit_id = w.id"
        f" AND (r.server_state IN ({_OPEN_STATES}) OR (r.server_state = {int(ServerState.OVER)}"
        f" AND r.outcome = {int(Outcome.SUCCESS)} AND r.validate_state <> {int(ValidateState.INVALID)}))))))"
        f" ORDER BY a.id LIMIT {int(limit)}",
        [project_id, host_id, account_id, team_id or 0, host_id],
    )


def assignments_delete(ids: Sequence[int]) -> None:
    """Delete these assignments.

    Why SQL: as the RPC's other statements; the ORM's delete collector reads them first.
    """
    ids = list(ids)
    execute(f"DELETE FROM work_assignment WHERE id IN ({placeholders(ids)})", ids)


def workunits_with_results_on_host(host_id: int, workunit_ids: Sequence[int]) -> set[int]:
    """Those of the workunits the host has a result of.

    Why SQL: as the RPC's other statements, one index lookup per RPC.
    """
    ids = list(workunit_ids)
    return {
        wu_id
        for (wu_id,) in fetch_rows(
            f"SELECT workunit_id FROM work_result WHERE host_id = %s AND workunit_id IN ({placeholders(ids)})",
            [host_id, *ids],
        )
    }


def workunits_by_id(ids: Sequence[int], columns: ModelColumns, *, lock: bool) -> dict[int, Workunit]:
    """The workunits (``columns`` of alias ``w``) by id; with ``lock``, each locked, one that
    another transaction holds skipped.

    Why SQL: ``FOR UPDATE SKIP LOCKED`` with only the columns a send reads; see the module
    docstring.
    """
    ids = list(ids)
    tail = " FOR UPDATE SKIP LOCKED" if lock and connection.features.has_select_for_update_skip_locked else ""
    rows = fetch_rows(
        f"SELECT {columns.sql()} FROM work_workunit w WHERE w.id IN ({placeholders(ids)}) ORDER BY w.id{tail}",
        ids,
    )
    return {wu.id: wu for wu in (columns.build(row) for row in rows)}


def result_states_of_workunits(ids: Sequence[int]) -> list[tuple[int, str, int | None, int, int, int]]:
    """(workunit id, name, host id, server state, outcome, validate state) of each result
    of the workunits.

    Why SQL: as the RPC's other statements; tuples, no models.
    """
    ids = list(ids)
    return fetch_rows(
        "SELECT workunit_id, name, host_id, server_state, outcome, validate_state FROM work_result"
        f" WHERE workunit_id IN ({placeholders(ids)})",
        ids,
    )


# The upload handler: one statement per upload, as the uploads of a project arrive at twice
# its job rate.
_UPLOAD_TIME = OutputFile._meta.get_field("upload_time")


def upload_target_row(project_id: int, name: str) -> tuple[Any, ...] | None:
    """(id, upload, max_nbytes, uploaded, nbytes, md5, result name, server state, outcome,
    file delete state, workunit error mask, in a sequence) of the project's output file
    ``name``, or None.

    Why SQL: one join for every upload, tuples rather than three model instances.
    """
    rows = fetch_rows(
        "SELECT f.id, f.upload, f.max_nbytes, f.uploaded, f.nbytes, f.md5_cksum, r.name, r.server_state,"
        " r.outcome, r.file_delete_state, w.error_mask, w.sequence_id IS NOT NULL"
        " FROM work_outputfile f JOIN work_result r ON r.id = f.result_id"
        " JOIN work_workunit w ON w.id = r.workunit_id"
        " WHERE f.name = %s AND r.project_id = %s",
        [name, project_id],
    )
    return rows[0] if rows else None


def output_file_mark_uploaded(*, output_id: int, nbytes: int, md5_cksum: str, now: datetime) -> bool:
    """Record the output file as uploaded with this size and md5 at ``now``, if its result's
    files are still kept; whether it was (the caller's upload lock keeps every other
    uploader of the file out meanwhile).

    Why SQL: the check on the result and the write in one statement; the ORM's
    ``.filter(Exists(...)).update()`` says the same at a compile per upload.
    """
    return (
        execute(
            "UPDATE work_outputfile SET uploaded = %s, nbytes = %s, md5_cksum = %s, upload_time = %s WHERE id = %s"
            " AND EXISTS (SELECT 1 FROM work_result r WHERE r.id = work_outputfile.result_id"
            " AND r.file_delete_state = %s)",
            [
                True,
                nbytes,
                md5_cksum,
                _UPLOAD_TIME.get_db_prep_save(now, connection),
                output_id,
                FileDeleteState.INIT,
            ],
        )
        == 1
    )
