"""The work app's hand-written SQL: each statement the ORM could not run as cheaply, named.

The rule (docs/architecture.md, "Hand-written SQL"): a statement is written by hand only
where a measurement showed the ORM's version costs more (statements per pass, Python time
per row) or cannot say it (``FOR UPDATE SKIP LOCKED`` inside an ``UPDATE … RETURNING``).
Each function says which. tests/work/test_queries.py runs each against a plain ORM version
on the same rows, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models import Field, Model
from django.utils import timezone

from apps.applications.models import App
from apps.core.db import (
    ModelColumns,
    WriteBatch,
    any_of,
    array_literal,
    db_datetime,
    execute,
    execute_many,
    fetch_rows,
    placeholders,
    quoted_table,
)
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.work.domain.states import AssimilateState, FileDeleteState, Outcome, ServerState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef

_RESULT = ModelColumns(Result, "r")
_WORKUNIT = ModelColumns(Workunit, "w")
_WORKUNIT_FIELD = Result._meta.get_field("workunit")
_VALIDATION_CLAIMED = ModelColumns(Workunit, "c", ["id", "transition_time"])


def results_with_workunits(
    where: str,
    params: Sequence[object],
    *,
    tail: str = "",
    columns: tuple[ModelColumns, ModelColumns] = (_RESULT, _WORKUNIT),
) -> list[Result]:
    """Results matching ``where`` (aliases ``r`` and ``w``), each with ``.workunit`` loaded.

    ``tail`` follows the WHERE clause: ORDER BY, LIMIT, FOR UPDATE... ``columns`` may name
    fewer columns of each (``ModelColumns(Result, "r", fields)``); the others are deferred.

    Why not ``select_related``: the scheduler RPC runs this several times per request, and
    building the query through the ORM cost about 1 ms of Python against 0.1 ms for the SQL
    (see ``ModelColumns``); the rows come back as the same model instances.
    """
    result_cols, workunit_cols = columns
    sql = (
        f"SELECT {result_cols.sql()}, {workunit_cols.sql()} FROM work_result r"
        f" JOIN work_workunit w ON w.id = r.workunit_id WHERE {where}{tail}"
    )
    conn = connections[DEFAULT_DB_ALIAS]
    # The relation's own setter checks types and database routing for each row; these
    # rows come from one query on one database, so the workunit is cached directly.
    cache_workunit = _WORKUNIT_FIELD.set_cached_value
    results = []
    for row in fetch_rows(sql, params):
        result = result_cols.build(row, 0, conn)
        cache_workunit(result, workunit_cols.build(row, result_cols.width, conn))
        results.append(result)
    return results


def workunits_claim_due(
    project_id: int, now: datetime, size: int, lease: datetime
) -> list[tuple[int, datetime]]:
    """The transitioner's claim: up to ``size`` of the project's workunits due at ``now``,
    oldest first, get ``lease`` as their transition time; their ids and former times.

    Why SQL on PostgreSQL: a select-then-update through the ORM takes two statements and a
    transaction holding the row locks between them; ``WITH … MATERIALIZED (… FOR UPDATE
    SKIP LOCKED) UPDATE … RETURNING`` claims in one statement that commits at once and lets concurrent
    transitioners skip each other's rows. SQLite has one writer, so the ORM's two
    statements in a transaction do the same there.
    """
    if connection.vendor == "postgresql":
        table = quoted_table(Workunit)
        rows = fetch_rows(
            f"WITH due AS MATERIALIZED (SELECT id, transition_time FROM {table} WHERE project_id = %s"
            " AND transition_time <= %s ORDER BY transition_time, id LIMIT %s FOR UPDATE SKIP LOCKED)"
            f" UPDATE {table} w SET transition_time = %s FROM due WHERE w.id = due.id"
            " RETURNING w.id, due.transition_time",
            [project_id, now, size, lease],
        )
        rows.sort(key=lambda row: (row[1], row[0]))
        return [(wu_id, old) for wu_id, old in rows]
    # SQLite's transactions hold the write lock from BEGIN: nobody claims in between.
    with transaction.atomic():
        found = list(
            Workunit.objects.filter(project_id=project_id, transition_time__lte=now)
            .order_by("transition_time", "id")
            .values_list("id", "transition_time")[:size]
        )
        if found:
            Workunit.objects.filter(id__in=[wu_id for wu_id, _ in found]).update(transition_time=lease)
    return [(wu_id, old) for wu_id, old in found if old is not None]


def workunits_claim_validation(app_id: int, now: datetime, limit: int, lease: datetime) -> list[Workunit]:
    """The validator's claim: up to ``limit`` of the app's workunits flagged need_validate,
    lowest ids first, get the flag cleared and a transition time of ``lease`` unless theirs
    is already due at ``now``; each as a Workunit with ``id`` and its former
    ``transition_time`` (the rest deferred).

    Why SQL: the new time depends on each row's own time (a CASE), and on PostgreSQL the
    claim is one ``WITH … MATERIALIZED (… FOR UPDATE SKIP LOCKED) UPDATE … RETURNING`` that
    commits at once so concurrent validators skip each other's rows; the ORM needs a locked
    SELECT and an UPDATE. The pick is a materialized CTE, run once: as a subquery in the
    UPDATE's FROM, a nested-loop plan runs it again per row and each run skips the rows just
    updated, claiming past ``limit``. On SQLite (one writer) the SELECT and the UPDATE run in one transaction.
    """
    lease_value = db_datetime(lease)
    table = quoted_table(Workunit)
    new_time = (
        "CASE WHEN w.transition_time IS NULL OR w.transition_time > %s THEN %s ELSE w.transition_time END"
    )
    columns = _VALIDATION_CLAIMED.sql()
    candidates = (
        f"SELECT {columns} FROM {table} c WHERE c.app_id = %s AND c.need_validate ORDER BY c.id LIMIT %s"
    )
    if connection.vendor == "postgresql":
        rows = fetch_rows(
            f"WITH c AS MATERIALIZED ({candidates} FOR UPDATE SKIP LOCKED) "
            f"UPDATE {table} AS w SET need_validate = false, transition_time = {new_time} "
            f"FROM c WHERE w.id = c.id RETURNING {columns}",
            [app_id, limit, db_datetime(now), lease_value],
        )
    else:
        # SQLite has one writer: the transaction holds the write lock from its start, so the
        # transition times read are those the claim replaces.
        with transaction.atomic():
            rows = fetch_rows(candidates, [app_id, limit])
            if not rows:
                return []
            ids, id_params = any_of("w.id", [row[0] for row in rows], "bigint")
            execute(
                f"UPDATE {table} AS w SET need_validate = %s, transition_time = {new_time} WHERE {ids}",
                [False, db_datetime(now), lease_value, *id_params],
            )
    return [_VALIDATION_CLAIMED.build(row) for row in rows]


def workunits_transition_claims_release(
    claims: Sequence[tuple[int, datetime, datetime | None]], *, need_validate: bool = False
) -> None:
    """For each ``(workunit id, lease, old time)``: where the transition time is still the
    lease, put the old time back; where it is the old time already, leave it.
    ``need_validate``: flag those workunits for the validator again too.

    Why SQL: each claim has its own lease and old time, so the ORM needs one UPDATE per
    claim; this is one statement (PostgreSQL, arrays through ``unnest``) or one statement
    run once per claim with ``executemany`` (SQLite).
    """
    if not claims:
        return
    flag = "need_validate = true, " if need_validate else ""
    sets = (
        f"{flag}transition_time = CASE WHEN w.transition_time = v.lease THEN v.old ELSE w.transition_time END"
    )
    where = "w.id = v.id AND (w.transition_time = v.lease OR w.transition_time = v.old)"
    rows = [(wu_id, db_datetime(lease), db_datetime(old)) for wu_id, lease, old in claims]
    table = quoted_table(Workunit)
    if connection.vendor == "postgresql":
        execute(
            f"UPDATE {table} w SET {sets} FROM unnest(%s::bigint[], %s::timestamptz[], %s::timestamptz[])"
            f" AS v(id, lease, old) WHERE {where}",
            [array_literal(column) for column in zip(*rows, strict=True)],
        )
        return
    execute_many(
        f"WITH v(id, lease, old) AS (VALUES (%s, %s, %s)) UPDATE {table} AS w SET {sets} FROM v WHERE {where}",
        rows,
    )


def workunits_transition_time_set(times: Sequence[tuple[int, datetime]]) -> None:
    """Set each ``(workunit id, time)``'s transition time.

    Why SQL: a time per workunit is one ``.update()`` per row through the ORM, each built
    again in Python; this is one statement sent with ``executemany``.
    """
    execute_many(
        f"UPDATE {quoted_table(Workunit)} SET transition_time = %s WHERE id = %s",
        [[db_datetime(at), wu_id] for wu_id, at in times],
    )


def _judged_host_app_versions_sql(where: str, workunits: str) -> str:
    """A SELECT locking, in id order, the host_app_versions of the results that match
    ``workunits`` and ``where`` (SQL on alias ``r``), parameters in that order."""
    quote = connection.ops.quote_name
    # The results first, then their hosts' rows through the host_id index: joined directly,
    # the planner can hash the whole host_app_version table for a handful of hosts.
    return (
        "WITH r AS MATERIALIZED (SELECT r.host_id, r.app_id, r.app_version_id, r.anonymous_proc_type "
        f"FROM {quote(Result._meta.db_table)} r WHERE {workunits} AND ({where})) "
        f"SELECT h.id FROM {quote(HostAppVersion._meta.db_table)} h JOIN r ON r.host_id = h.host_id AND ("
        "h.app_version_id = r.app_version_id OR (r.app_version_id IS NULL AND h.app_version_id IS NULL"
        " AND h.app_id = r.app_id AND h.anonymous_proc_type = r.anonymous_proc_type)) "
        "WHERE h.host_id = ANY(ARRAY(SELECT r.host_id FROM r)) ORDER BY h.id FOR UPDATE OF h"
    )


def host_app_versions_lock_for_results(
    workunit_ids: Sequence[int], where: str, params: Sequence[Any]
) -> list[int]:
    """Lock, in id order, the host_app_versions the workunits' results matching ``where``
    (SQL on alias ``r``, with ``params``) ran as; their ids. PostgreSQL only (the caller
    checks ``has_select_for_update``).

    Why SQL: the ORM cannot say "the host_app_version matching the result's app version, or
    its app and anonymous platform when it has none" as a join, nor materialize the results
    first so the planner reaches host_app_version through its host_id index (joined
    directly it hashed the whole table for a handful of hosts).
    """
    workunits, workunit_params = any_of("r.workunit_id", list(workunit_ids), "bigint")
    rows = fetch_rows(_judged_host_app_versions_sql(where, workunits), [*workunit_params, *params])
    return [row[0] for row in rows]


def results_of_workunits_locked(
    workunit_ids: Sequence[int], columns: ModelColumns, *, lock: bool = True
) -> list[Result]:
    """The workunits' results (``columns`` of alias ``r``), locked FOR UPDATE in id order, as
    the transitioner and the validator both lock them (SQLite has no row locks: its
    IMMEDIATE transactions hold the database's write lock). ``lock=False``: read only.

    Why SQL: run for every daemon batch, with only the columns the plans read; built by the
    ORM the query cost more Python time than the database took to answer (see
    ``ModelColumns``), and ``any_of`` keeps one statement shape for any number of ids.
    """
    cond, params = any_of("r.workunit_id", list(workunit_ids), "bigint")
    tail = " FOR UPDATE OF r" if lock and connection.features.has_select_for_update else ""
    sql = f"SELECT {columns.sql()} FROM {quoted_table(Result)} r WHERE {cond} ORDER BY r.id{tail}"
    return [columns.build(row) for row in fetch_rows(sql, params)]


def workunits_in_order(workunit_ids: Sequence[int], columns: ModelColumns) -> list[Workunit]:
    """The workunits (``columns`` of alias ``w``) in id order.

    Why SQL: as ``results_of_workunits_locked``, once per daemon batch.
    """
    cond, params = any_of("w.id", list(workunit_ids), "bigint")
    sql = f"SELECT {columns.sql()} FROM {quoted_table(Workunit)} w WHERE {cond} ORDER BY w.id"
    return [columns.build(row) for row in fetch_rows(sql, params)]


def workunits_with_transition_settings(
    workunit_ids: Sequence[int], columns: ModelColumns
) -> list[tuple[Workunit, int, int, int, int]]:
    """The workunits (``columns`` of alias ``w``) in id order, each with its project's
    report grace period, delete delay (hours) and reliable-priority thresholds.

    Why SQL: as ``results_of_workunits_locked``; the four project columns come in the same
    row, where ``select_related`` would build a whole Project per workunit.
    """
    where, params = any_of("w.id", list(workunit_ids), "bigint")
    rows = fetch_rows(
        f"SELECT {columns.sql()}, p.report_grace_period, p.delete_delay_hours, p.reliable_priority_on_over,"
        f" p.reliable_priority_on_over_except_error FROM {quoted_table(Workunit)} w"
        f" JOIN {quoted_table(Project)} p ON p.id = w.project_id WHERE {where} ORDER BY w.id",
        params,
    )
    return [(columns.build(row), *row[columns.width :]) for row in rows]


def workunit_and_results_early(
    workunit_ids: Sequence[int], workunit_columns: ModelColumns, result_columns: ModelColumns
) -> list[tuple[Workunit, Result]]:
    """Each result of the workunits with its workunit, in result id order, without locks
    (one Workunit instance per workunit).

    Why SQL: the validator reads these for every batch before taking its locks; one join
    with only the deciding columns, against a query and a model build per table.
    """
    cond, params = any_of("w.id", list(workunit_ids), "bigint")
    rows = fetch_rows(
        f"SELECT {workunit_columns.sql()}, {result_columns.sql()} FROM {quoted_table(Workunit)} w"
        f" JOIN {quoted_table(Result)} r ON r.workunit_id = w.id WHERE {cond} ORDER BY r.id",
        params,
    )
    wus: dict[int, Workunit] = {}
    found = []
    for row in rows:
        wu = wus.get(row[0])
        if wu is None:
            wu = wus[row[0]] = workunit_columns.build(row)
        found.append((wu, result_columns.build(row, workunit_columns.width)))
    return found


def results_unsent_withdraw(workunit_ids: Sequence[int]) -> int:
    """The workunits' results not sent yet (unsent or inactive) become over, didn't need;
    how many.

    Why SQL: the ORM's ``.update()`` says the same, but its compile costs more Python time
    than the statement (once per validator batch); ``any_of`` keeps one statement shape.
    """
    if not workunit_ids:
        return 0
    cond, params = any_of("workunit_id", list(workunit_ids), "bigint")
    return execute(
        f"UPDATE {quoted_table(Result)} SET server_state = %s, outcome = %s WHERE {cond} AND server_state IN (%s, %s)",
        [
            int(ServerState.OVER),
            int(Outcome.DIDNT_NEED),
            *params,
            int(ServerState.UNSENT),
            int(ServerState.INACTIVE),
        ],
    )


_SQLITE_UPDATE_ROWS = 500  # rows per statement, within SQLite's limit on parameters


def _values_update(
    model: type[Any],
    values: Sequence[tuple[str, str]],
    sets: str,
    where: str,
    rows: Sequence[Sequence[Any]],
    set_params: Sequence[Any] = (),
) -> list[tuple[str, list[Any]]]:
    """``UPDATE table w SET sets`` joined to ``rows`` as ``v(names)`` (``values``: each
    column's name and PostgreSQL type) where ``where``: on PostgreSQL one statement, the rows
    as one array per column; elsewhere ``WITH v AS (VALUES …)``, 500 rows a statement.
    ``set_params`` are the parameters ``sets`` holds."""
    table, names = quoted_table(model), ", ".join(name for name, _type in values)
    if connection.vendor == "postgresql":
        arrays = ", ".join(f"%s::{sql_type}[]" for _name, sql_type in values)
        return [
            (
                f"UPDATE {table} w SET {sets} FROM unnest({arrays}) AS v({names}) WHERE {where}",
                [*set_params, *(array_literal(column) for column in zip(*rows, strict=True))],
            )
        ]
    row_sql = "(" + ", ".join(["%s"] * len(values)) + ")"
    statements = []
    for start in range(0, len(rows), _SQLITE_UPDATE_ROWS):
        chunk = rows[start : start + _SQLITE_UPDATE_ROWS]
        statements.append(
            (
                f"WITH v({names}) AS (VALUES {', '.join([row_sql] * len(chunk))})"
                f" UPDATE {table} AS w SET {sets} FROM v WHERE {where}",
                [*(value for row in chunk for value in row), *set_params],
            )
        )
    return statements


# The transitioner's workunit UPDATE: its values for each row, with their PostgreSQL types.
TRANSITION_VALUES = (
    ("id", "bigint"),
    ("lease", "timestamptz"),  # NULL: no claim, the next time is written whatever is there
    ("next_time", "timestamptz"),  # NULL: never
    ("mask", "integer"),
    ("need_validate", "boolean"),
    ("assimilate", "boolean"),
    ("delete_ready", "boolean"),
    ("reset_hr", "boolean"),
    ("priority", "integer"),  # NULL: unchanged
)
_TRANSITION_SET = (
    "transition_time = CASE WHEN v.lease IS NULL OR w.transition_time = v.lease THEN v.next_time"
    " ELSE w.transition_time END,"
    " error_mask = w.error_mask | v.mask,"
    " need_validate = w.need_validate OR v.need_validate,"
    f" assimilate_state = CASE WHEN v.assimilate AND w.assimilate_state = {int(AssimilateState.INIT)}"
    f" THEN {int(AssimilateState.READY)} ELSE w.assimilate_state END,"
    f" file_delete_state = CASE WHEN v.delete_ready AND w.file_delete_state = {int(FileDeleteState.INIT)}"
    f" THEN {int(FileDeleteState.READY)} ELSE w.file_delete_state END,"
    " app_version_id = CASE WHEN v.reset_hr THEN NULL ELSE w.app_version_id END,"
    " hr_class = CASE WHEN v.reset_hr THEN 0 ELSE w.hr_class END,"
    " priority = COALESCE(v.priority, w.priority)"
)


def workunits_transition_apply(rows: Sequence[Sequence[Any]], writes: WriteBatch) -> None:
    """The transitioner's changes to its workunits (one row of ``TRANSITION_VALUES`` each),
    into ``writes``. The rows are not locked, so each change is relative to what is there:
    error bits OR-ed in, need_validate only set, assimilation and file deletion only moved
    on from INIT, the next transition time written only over this claim's lease.

    Why SQL: every workunit gets its own values and the changes depend on the row's own
    columns; the ORM needs an UPDATE per workunit (``bulk_update`` cannot OR or compare),
    this is one statement per batch.
    """
    if not rows:
        return
    keys = frozenset(row[0] for row in rows)
    for sql, params in _values_update(Workunit, TRANSITION_VALUES, _TRANSITION_SET, "w.id = v.id", rows):
        writes.add(sql, params, table=Workunit._meta.db_table, keys=keys)


# The validator's workunit UPDATE: need_validate always goes off; the other columns change
# where a value is given. A canonical result is set only on a workunit that has none yet.
VALIDATION_VALUES = (
    ("wu_id", "bigint"),
    ("canonical", "bigint"),
    ("credit", "double precision"),
    ("assimilate", "boolean"),
    ("mask", "integer"),
    ("target", "integer"),
    ("set_time", "boolean"),
    ("new_time", "timestamptz"),
)
_VALIDATION_SETS = (
    "need_validate = %s, canonical_result_id = COALESCE(v.canonical, w.canonical_result_id), "
    "canonical_credit = CASE WHEN v.canonical IS NULL THEN w.canonical_credit ELSE v.credit END, "
    "assimilate_state = CASE WHEN v.assimilate AND w.assimilate_state = %s THEN %s ELSE w.assimilate_state END, "
    "error_mask = w.error_mask | v.mask, target_nresults = COALESCE(v.target, w.target_nresults), "
    "transition_time = CASE WHEN v.set_time THEN v.new_time ELSE w.transition_time END"
)
_VALIDATION_WHERE = "w.id = v.wu_id AND (v.canonical IS NULL OR w.canonical_result_id IS NULL)"


def workunits_validation_write(rows: Sequence[Sequence[Any]]) -> None:
    """The validator's changes to its judged workunits (one row of ``VALIDATION_VALUES``
    each).

    Why SQL: as ``workunits_transition_apply``: values per workunit, some kept where the
    row already has one (COALESCE, OR): one statement instead of one per workunit.
    """
    if not rows:
        return
    set_params = [False, int(AssimilateState.INIT), int(AssimilateState.READY)]
    for sql, params in _values_update(
        Workunit, VALIDATION_VALUES, _VALIDATION_SETS, _VALIDATION_WHERE, rows, set_params
    ):
        execute(sql, params)


def transition_times_lower(times: Mapping[int, datetime], *, batch: WriteBatch | None = None) -> None:
    """Bring each workunit's transition time forward to its given time (never push it back).

    One statement on PostgreSQL (the pairs travel as two arrays), one per workunit elsewhere;
    with ``batch`` it waits there until ``batch.flush()``.

    Why SQL: the scheduler RPC runs it for every request that reports or sends; the ORM
    needs an UPDATE per workunit, each compiled in Python, and cannot join the batch.
    """
    if not times:
        return
    field = Workunit._meta.get_field("transition_time")
    ids = list(times)
    stamps = [field.get_db_prep_save(times[i], connection) for i in ids]
    target = batch if batch is not None else WriteBatch()
    if connection.vendor == "postgresql":
        target.add(
            "UPDATE work_workunit w SET transition_time = v.t"
            " FROM unnest(%s::bigint[], %s::timestamptz[]) AS v(id, t)"
            " WHERE w.id = v.id AND (w.transition_time IS NULL OR w.transition_time > v.t)",
            [array_literal(ids), array_literal(stamps)],
            table=Workunit._meta.db_table,
            keys=frozenset(ids),
        )
    else:
        target.add_many(
            "UPDATE work_workunit SET transition_time = %s"
            " WHERE id = %s AND (transition_time IS NULL OR transition_time > %s)",
            [(stamp, i, stamp) for i, stamp in zip(ids, stamps, strict=True)],
        )
    if batch is None:
        target.flush()


# The assimilator. A claim sets a lease in assimilate_retry_time and counts an attempt; the
# attempt count it set marks the claim as this worker's in every later write.
_ASSIMILATE_READY = int(AssimilateState.READY)


def workunits_assimilate_ready_ids(project_id: int, *, due_by: datetime | None, limit: int) -> list[int]:
    """Ids of the project's READY workunits, by retry time then id: those whose retry is due
    by ``due_by``, or (``None``) those never tried. Rows another worker holds are skipped.

    Why SQL: ``FOR UPDATE SKIP LOCKED`` with ``LIMIT`` on one range of the
    wu_assimilate_ready index, ordered by retry time too (PostgreSQL does not take
    ``IS NULL`` as fixing the column, so ``ORDER BY id`` alone would sort every READY row).
    """
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    select = f"SELECT id FROM {quoted_table(Workunit)} WHERE project_id = %s AND assimilate_state = %s AND "
    order = f" ORDER BY assimilate_retry_time, id LIMIT %s{lock}"
    if due_by is None:
        rows = fetch_rows(
            f"{select}assimilate_retry_time IS NULL{order}", [project_id, _ASSIMILATE_READY, limit]
        )
    else:
        rows = fetch_rows(
            f"{select}assimilate_retry_time <= %s{order}",
            [project_id, _ASSIMILATE_READY, db_datetime(due_by), limit],
        )
    return [row[0] for row in rows]


def workunits_claim_assimilation(workunit_ids: Sequence[int], lease: datetime) -> dict[int, int]:
    """The assimilator's claim: the workunits still READY count an attempt and get ``lease``
    as their retry time; their ids with the new attempt count.

    Why SQL: ``UPDATE … RETURNING`` claims and reads the counts in one statement; the ORM's
    ``.update()`` returns only a row count, so it would need a SELECT after it.
    """
    where, params = any_of("id", list(workunit_ids), "bigint")
    rows = fetch_rows(
        f"UPDATE {quoted_table(Workunit)} SET assimilate_attempts = assimilate_attempts + 1, "
        f"assimilate_retry_time = %s WHERE {where} AND assimilate_state = %s "
        "RETURNING id, assimilate_attempts",
        [db_datetime(lease), *params, _ASSIMILATE_READY],
    )
    return dict(rows)


def workunits_with_app_and_canonical(
    workunit_ids: Sequence[int],
    workunit_columns: ModelColumns,
    app_columns: ModelColumns,
    result_columns: ModelColumns,
) -> list[tuple[Workunit, App, Result | None]]:
    """Each workunit with its app and canonical result (None: none yet); one App instance
    per app.

    Why SQL: one join for the assimilator's batch, building the model instances without
    ``Model.__init__`` (see ``ModelColumns``); ``select_related`` costs more Python time
    than the query.
    """
    where, params = any_of("w.id", list(workunit_ids), "bigint")
    rows = fetch_rows(
        f"SELECT {workunit_columns.sql()}, {app_columns.sql()}, {result_columns.sql()} FROM {quoted_table(Workunit)} w "
        f"JOIN {quoted_table(App)} a ON a.id = w.app_id "
        f"LEFT JOIN {quoted_table(Result)} c ON c.id = w.canonical_result_id WHERE {where}",
        params,
    )
    conn = connections[DEFAULT_DB_ALIAS]
    apps: dict[int, App] = {}
    found = []
    canonical_at = workunit_columns.width + app_columns.width
    for row in rows:
        wu = workunit_columns.build(row, 0, conn)
        app = apps.get(wu.app_id)
        if app is None:
            app = apps[wu.app_id] = app_columns.build(row, workunit_columns.width, conn)
        canonical = result_columns.build(row, canonical_at, conn) if row[canonical_at] is not None else None
        found.append((wu, app, canonical))
    return found


def _values_table(rows: Sequence[Sequence[Any]], types: Sequence[str]) -> tuple[str, list[Any]]:
    """``rows`` as a table for ``WITH v (...) AS (here)``: on PostgreSQL one array per column
    through unnest, so the statement has one shape whatever the number of rows and is
    prepared once; elsewhere a VALUES list."""
    if connection.vendor == "postgresql":
        arrays = ", ".join(f"%s::{t}[]" for t in types)
        return f"SELECT * FROM unnest({arrays})", [array_literal(col) for col in zip(*rows, strict=True)]
    row = "(" + ", ".join(["%s"] * len(types)) + ")"
    return "VALUES " + ", ".join([row] * len(rows)), [value for r in rows for value in r]


def workunits_assimilation_write(
    columns: Sequence[str],
    types: Sequence[str],
    rows: Sequence[Sequence[Any]],
    sets: str,
    params: Sequence[Any],
) -> set[int]:
    """``UPDATE … SET sets`` of the workunits in ``v (wu, claim, *columns)`` (``types``: the
    PostgreSQL types of ``columns``) whose claim the assimilator still holds (READY, with the
    attempt count its claim set); their ids. ``params`` are those of ``sets``.

    Why SQL: each workunit has its own values and its own claim to check, and the caller
    needs the rows written: the ORM needs an UPDATE per workunit and cannot return ids.
    """
    source, source_params = _values_table(rows, ("bigint", "integer", *types))
    sql = (
        f"WITH v ({', '.join(['wu', 'claim', *columns])}) AS ({source}) UPDATE {quoted_table(Workunit)} AS w SET {sets} "
        "FROM v WHERE w.id = v.wu AND w.assimilate_attempts = v.claim AND w.assimilate_state = %s "
        "RETURNING id"  # unqualified: SQLite's RETURNING sees only the table written
    )
    return {row[0] for row in fetch_rows(sql, [*source_params, *params, _ASSIMILATE_READY])}


def workunits_assimilation_claims_release(claims: Sequence[tuple[int, int]], now: datetime) -> None:
    """For each ``(workunit id, attempts)``: due again at ``now``, where the claim is still
    the one that set that attempt count.

    Why SQL: one statement sent with ``executemany`` instead of an ORM ``.update()`` built per
    claim.
    """
    execute_many(
        f"UPDATE {quoted_table(Workunit)} SET assimilate_retry_time = %s "
        "WHERE id = %s AND assimilate_attempts = %s AND assimilate_state = %s",
        [(db_datetime(now), wu_id, attempts, _ASSIMILATE_READY) for wu_id, attempts in claims],
    )


def workunits_assimilation_waiting(project_id: int, now: datetime) -> int:
    """How many of the project's READY workunits back off after a failed hook (or are leased
    by a worker running it).

    Why SQL: kept beside the assimilator's other statements on the same index; the ORM's
    ``.count()`` says the same at a compile per pass.
    """
    rows = fetch_rows(
        f"SELECT count(*) FROM {quoted_table(Workunit)} WHERE project_id = %s AND assimilate_state = %s "
        "AND assimilate_retry_time > %s",
        [project_id, _ASSIMILATE_READY, db_datetime(now)],
    )
    return int(rows[0][0])


# The file deleter. Each step picks its rows itself: ``only`` (just these ids) or ``skip``
# (any but these), as apps.work.services.claims.rows_batch_run passes them.
_FILE_DONE, _FILE_ERROR, _FILE_READY = (
    int(FileDeleteState.DONE),
    int(FileDeleteState.ERROR),
    int(FileDeleteState.READY),
)


def _ids_picked(only: Sequence[int] | None, skip: Sequence[int], column: str = "id") -> tuple[str, list[Any]]:
    """The condition on ``column`` of a batch's rows: just ``only``, or any but ``skip``."""
    if only is not None:
        where, params = any_of(column, list(only), "bigint")
        return f" AND {where}", params
    if skip:
        where, params = any_of(column, list(skip), "bigint")
        return f" AND NOT ({where})", params
    return "", []


def _skip_locked() -> str:
    return " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""


def rows_file_delete_ready(
    model: type[Workunit] | type[Result],
    project_id: int,
    columns: str,
    *,
    only: Sequence[int] | None,
    skip: Sequence[int],
    limit: int,
) -> list[tuple[Any, ...]]:
    """``columns`` (SQL) of up to ``limit`` of the project's workunits or results whose
    files are ready to delete, in id order, skipping rows another deleter holds.

    Why SQL: ``FOR UPDATE SKIP LOCKED`` with a LIMIT on the file_delete_state index, and an
    id condition (``any_of``) of one shape whatever the number of ids left out.
    """
    picked, picked_params = _ids_picked(only, skip)
    return fetch_rows(
        f"SELECT {columns} FROM {quoted_table(model)} WHERE project_id = %s AND file_delete_state = %s"
        f"{picked} ORDER BY id LIMIT %s{_skip_locked()}",
        [project_id, _FILE_READY, *picked_params, limit],
    )


def workunit_file_refs(workunit_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(workunit id, input file id) of each input file the workunits use.

    Why SQL: ``values_list`` says the same at an ORM compile per batch; kept with the file
    deleter's other reads, one statement shape whatever the number of ids.
    """
    where, params = any_of("workunit_id", list(workunit_ids), "bigint")
    return [
        (wu_id, file_id)
        for wu_id, file_id in fetch_rows(
            f"SELECT workunit_id, file_id FROM {quoted_table(WorkunitFileRef)} WHERE {where}", params
        )
    ]


_INPUT_FILE_COLUMNS = "id, name, sticky, no_delete, gzip, file_delete_state"


def input_files_locked(file_ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """(id, name, sticky, no_delete, gzip, file_delete_state) of the input files, locked in
    id order (a creator reusing one waits, then sees whether it went).

    Why SQL: six columns of rows locked FOR UPDATE once per batch, without building models.
    """
    where, params = any_of("id", list(file_ids), "bigint")
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return fetch_rows(
        f"SELECT {_INPUT_FILE_COLUMNS} FROM {quoted_table(InputFile)} WHERE {where} ORDER BY id{lock}", params
    )


def input_files_ready_locked(project_id: int, limit: int) -> list[tuple[Any, ...]]:
    """The columns of ``input_files_locked`` for up to ``limit`` of the project's input
    files left READY, skipping those another deleter holds.

    Why SQL: ``FOR UPDATE SKIP LOCKED`` with a LIMIT.
    """
    return fetch_rows(
        f"SELECT {_INPUT_FILE_COLUMNS} FROM {quoted_table(InputFile)} "
        f"WHERE project_id = %s AND file_delete_state = %s ORDER BY id LIMIT %s{_skip_locked()}",
        [project_id, _FILE_READY, limit],
    )


def input_files_used_elsewhere(file_ids: Sequence[int], outside: Sequence[int]) -> set[int]:
    """Those of the input files a workunit not in ``outside``, not finished with its files,
    uses.

    Why SQL: EXISTS stops at the first user (a locality file may have thousands), with the
    join to the workunit inside it; the ORM's ``Exists`` says it too, at a compile per batch
    that costs more than the statement.
    """
    where, params = any_of("f.id", list(file_ids), "bigint")
    excluded = ""
    excluded_params: list[Any] = []
    if outside:
        excluded, excluded_params = any_of("r.workunit_id", sorted(outside), "bigint")
        excluded = f" AND NOT ({excluded})"
    rows = fetch_rows(
        f"SELECT f.id FROM {quoted_table(InputFile)} f WHERE {where} AND EXISTS (SELECT 1 FROM "
        f"{quoted_table(WorkunitFileRef)} r JOIN {quoted_table(Workunit)} w ON w.id = r.workunit_id "
        f"WHERE r.file_id = f.id AND w.file_delete_state NOT IN (%s, %s){excluded})",
        [*params, _FILE_DONE, _FILE_ERROR, *excluded_params],
    )
    return {row[0] for row in rows}


def names_in_working_set(locality_file: type[Any], project_id: int, names: Sequence[str]) -> set[str]:
    """Those of ``names`` the project's locality working set holds (``locality_file``: the
    locality app's model, passed in because locality sits above work in the layers).

    Why SQL: a name list as one array (``any_of``), one statement shape whatever its length.
    """
    where, params = any_of("name", list(names), "text")
    rows = fetch_rows(
        f"SELECT name FROM {quoted_table(locality_file)} WHERE project_id = %s AND in_working_set = %s AND {where}",
        [project_id, True, *params],
    )
    return {row[0] for row in rows}


def file_delete_states_write(model: type[Any], states: Mapping[int, int]) -> None:
    """Each row's new file_delete_state: one UPDATE per state (nearly always DONE alone).

    Why SQL: as the ORM's ``.update()`` per state, with an id list of one statement shape.
    """
    by_state: dict[int, list[int]] = {}
    for row_id, state in states.items():
        by_state.setdefault(state, []).append(row_id)
    for state, ids in by_state.items():
        where, params = any_of("id", ids, "bigint")
        execute(f"UPDATE {quoted_table(model)} SET file_delete_state = %s WHERE {where}", [state, *params])


def uploaded_output_names(result_ids: Sequence[int]) -> list[tuple[int, str]]:
    """(result id, file name) of each output file of the results that is uploaded.

    Why SQL: as ``workunit_file_refs``.
    """
    where, params = any_of("result_id", list(result_ids), "bigint")
    return [
        (result_id, name)
        for result_id, name in fetch_rows(
            f"SELECT result_id, name FROM {quoted_table(OutputFile)} WHERE {where} AND upload = %s",
            [*params, True],
        )
    ]


# db_purge. Through the ORM, the prefetches, the model instances and the delete collector
# cost several times these statements.


def workunits_purgeable(
    project_id: int,
    cutoff: datetime,
    limit: int,
    columns: ModelColumns,
    *,
    only: Sequence[int] | None,
    skip: Sequence[int],
    holds: Sequence[tuple[str, Sequence[Any]]] = (),
) -> list[Workunit]:
    """Up to ``limit`` of the project's workunits whose files are deleted, created by
    ``cutoff``, not held by an app above work (``holds``: SQL conditions on alias ``w``
    with their parameters, e.g. a step of a sequence that has not ended) and with no result
    received after ``cutoff``; in id order, skipping those another purger holds (``columns``
    of alias ``w``; just ``only``, or any but ``skip``).

    Why SQL: the NOT EXISTS on results and ``FOR UPDATE OF w SKIP LOCKED`` with a LIMIT in
    one statement, the rows built without ``Model.__init__``.
    """
    picked, picked_params = _ids_picked(only, skip, "w.id")
    held = "".join(f"AND NOT ({sql}) " for sql, _ in holds)
    lock = " FOR UPDATE OF w SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    rows = fetch_rows(
        f"SELECT {columns.sql()} FROM {quoted_table(Workunit)} w "
        "WHERE w.project_id = %s AND w.file_delete_state = %s AND w.create_time <= %s "
        f"{held}"
        f"AND NOT EXISTS (SELECT 1 FROM {quoted_table(Result)} r WHERE r.workunit_id = w.id AND r.received_time > %s)"
        f"{picked} ORDER BY w.id LIMIT %s{lock}",
        [
            project_id,
            _FILE_DONE,
            db_datetime(cutoff),
            *(param for _, params in holds for param in params),
            db_datetime(cutoff),
            *picked_params,
            limit,
        ],
    )
    conn = connections[DEFAULT_DB_ALIAS]
    return [columns.build(row, 0, conn) for row in rows]


def workunit_inputs_for_archive(workunit_ids: Sequence[int]) -> list[tuple[int, str, str, int, str]]:
    """(workunit id, file name, md5, size, open name) of each input of the workunits, by
    workunit and ordinal.

    Why SQL: one join for a purge batch, tuples rather than models.
    """
    where, params = any_of("r.workunit_id", list(workunit_ids), "bigint")
    return fetch_rows(
        f"SELECT r.workunit_id, f.name, f.md5_cksum, f.nbytes, r.open_name FROM {quoted_table(WorkunitFileRef)} r "
        f"JOIN {quoted_table(InputFile)} f ON f.id = r.file_id WHERE {where} ORDER BY r.workunit_id, r.ordinal",
        params,
    )


def result_outputs_for_archive(workunit_ids: Sequence[int]) -> list[tuple[int, str, int, str, Any]]:
    """(result id, name, size, md5, uploaded) of each output file of the workunits' results,
    by result, ordinal and id.

    Why SQL: as ``workunit_inputs_for_archive``.
    """
    where, params = any_of("r.workunit_id", list(workunit_ids), "bigint")
    return fetch_rows(
        f"SELECT f.result_id, f.name, f.nbytes, f.md5_cksum, f.uploaded FROM {quoted_table(OutputFile)} f "
        f"JOIN {quoted_table(Result)} r ON r.id = f.result_id WHERE {where} ORDER BY f.result_id, f.ordinal, f.id",
        params,
    )


def column_set_null(model: type[models.Model], column: str, ids: Sequence[int], keep: Sequence[int]) -> None:
    """``column = NULL`` on ``model``'s rows pointing at ``ids`` (SET_NULL, as the ORM's
    delete would), except rows whose id is in ``keep`` (rows being purged themselves).

    Why SQL: the ORM's delete collector reads the related rows into models first.
    """
    where, params = any_of(column, list(ids), "bigint")
    if keep:
        kept, kept_params = any_of("id", list(keep), "bigint")
        where, params = f"{where} AND NOT ({kept})", [*params, *kept_params]
    execute(f"UPDATE {quoted_table(model)} SET {column} = NULL WHERE {where}", params)


def results_delete(workunit_ids: Sequence[int]) -> list[int]:
    """Delete the workunits' results; their ids.

    Why SQL: ``DELETE … RETURNING`` in one statement; the ORM's delete collects the rows
    and their relations first.
    """
    where, params = any_of("workunit_id", list(workunit_ids), "bigint")
    return [
        row[0] for row in fetch_rows(f"DELETE FROM {quoted_table(Result)} WHERE {where} RETURNING id", params)
    ]


def rows_delete(model: type[models.Model], column: str, ids: Sequence[int]) -> None:
    """Delete ``model``'s rows whose ``column`` is one of ``ids``.

    Why SQL: as ``results_delete``; the callers have cleared or deleted what refers to them.
    """
    where, params = any_of(column, list(ids), "bigint")
    execute(f"DELETE FROM {quoted_table(model)} WHERE {where}", params)


def orphan_input_files_delete(project_id: int) -> list[int]:
    """Delete the project's input-file rows whose file is deleted and that no workunit
    references any more; their ids. The state is checked in the DELETE itself: a creator
    reusing one sets it back to INIT first, under its lock.

    Why SQL: the check and the delete in one statement, with RETURNING.
    """
    table = quoted_table(InputFile)
    return [
        row[0]
        for row in fetch_rows(
            f"DELETE FROM {table} WHERE project_id = %s AND file_delete_state = %s AND NOT EXISTS "
            f"(SELECT 1 FROM {quoted_table(WorkunitFileRef)} r WHERE r.file_id = {table}.id) RETURNING id",
            [project_id, _FILE_DONE],
        )
    ]


def output_names_by_result(result_ids: Sequence[int]) -> list[tuple[int, str, Any, str]]:
    """(result id, name, optional, open name) of each uploaded output file of the results,
    by result and ordinal.

    Why SQL: one statement per batch, tuples rather than models.
    """
    cond, params = any_of("f.result_id", sorted(result_ids), "bigint")
    return fetch_rows(
        f"SELECT f.result_id, f.name, f.optional, f.open_name FROM {quoted_table(OutputFile)} f "
        f"WHERE {cond} AND f.upload = %s ORDER BY f.result_id, f.ordinal",
        [*params, True],
    )


# Work creation.
# SQLite allows 32,766 parameters a statement: rows of ~40 columns, a few hundred at a time.
_SQLITE_INSERT_ROWS = 500


def input_file_states_key_shared(file_ids: Sequence[int]) -> list[tuple[int, int]]:
    """(id, file_delete_state) of the input files, in id order, held FOR KEY SHARE on
    PostgreSQL until the transaction ends.

    Why SQL: the ORM's ``select_for_update(no_key=True)`` takes FOR NO KEY UPDATE, which
    would make creators sharing a file wait for each other; FOR KEY SHARE only makes the
    file deleter's FOR UPDATE wait.
    """
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    table = quoted_table(InputFile)
    ids = list(file_ids)
    return fetch_rows(
        f"SELECT id, file_delete_state FROM {table} WHERE id IN ({placeholders(ids)}) ORDER BY id{lock}", ids
    )


def rows_insert(
    model: type[Model],
    varying: tuple[str, ...],
    rows: Sequence[tuple[Any, ...]],
    *,
    returning: tuple[str, ...] = (),
    batch: WriteBatch | None = None,
) -> list[tuple[Any, ...]]:
    """INSERT ``rows`` (values of the ``varying`` fields, ready for the database: ints, strs,
    bools) into ``model``'s table; its other columns take their fields' defaults (creation
    times the wall clock, as ``auto_now_add`` gives the ORM's rows). The ``returning``
    columns of the rows inserted, in no particular order; with ``batch`` (nothing returned)
    the statement waits there until ``batch.flush()``.

    Why SQL: ``bulk_create`` builds every instance and, on PostgreSQL, a statement whose
    shape changes with the number of rows; this sends one array per column through
    ``unnest`` (one statement shape, prepared once) with RETURNING of just the columns
    asked for, and elsewhere 500-row VALUES lists.
    """
    meta, quote = model._meta, connection.ops.quote_name
    fields = [cast(Field, meta.get_field(name)) for name in varying]
    constant = [f for f in meta.concrete_fields if not f.primary_key and f not in fields]
    columns = ", ".join(quote(f.column) for f in [*fields, *constant])
    defaults = [f.get_db_prep_save(_default(f), connection) for f in constant]
    tail = (
        f" RETURNING {', '.join(quote(cast(Field, meta.get_field(c)).column) for c in returning)}"
        if returning
        else ""
    )
    table = quote(meta.db_table)
    if connection.vendor == "postgresql":
        names = [f"c{i}" for i in range(len(fields))]
        arrays = ", ".join(f"%s::{f.db_type(connection)}[]" for f in fields)
        values = ", ".join([*(f"v.{n}" for n in names), *(f"%s::{f.db_type(connection)}" for f in constant)])
        sql = (
            f"INSERT INTO {table} ({columns}) SELECT {values} FROM unnest({arrays}) AS v({', '.join(names)})"
            + tail
        )
        params = [*defaults, *(array_literal(col) for col in zip(*rows, strict=True))]
        if returning:
            return fetch_rows(sql, params)
        if batch is not None:
            batch.add(sql, params, table=meta.db_table)
        else:
            execute(sql, params)
        return []
    found: list[tuple[Any, ...]] = []
    row_sql = f"({', '.join(['%s'] * (len(fields) + len(constant)))})"
    for start in range(0, len(rows), _SQLITE_INSERT_ROWS):
        chunk = rows[start : start + _SQLITE_INSERT_ROWS]
        sql = f"INSERT INTO {table} ({columns}) VALUES {', '.join([row_sql] * len(chunk))}{tail}"
        params = [value for row in chunk for value in (*row, *defaults)]
        if returning:
            found += fetch_rows(sql, params)
        elif batch is not None:
            batch.add(sql, params, table=meta.db_table)
        else:
            execute(sql, params)
    return found


def _default(f: Field) -> Any:
    if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
        return timezone.now()
    return f.get_default()


def apps_with_projects(
    app_ids: Sequence[int], app_columns: ModelColumns, project_columns: ModelColumns
) -> dict[int, App]:
    """The apps by id, each with its project loaded (``app_columns`` of alias ``a``,
    ``project_columns`` of alias ``p``).

    Why SQL: once per validator batch; ``select_related`` built the same instances at a
    higher Python cost than the join (see ``ModelColumns``).
    """
    cond, params = any_of("a.id", list(app_ids), "bigint")
    apps: dict[int, App] = {}
    sql = (
        f"SELECT {app_columns.sql()}, {project_columns.sql()} FROM {quoted_table(App)} a "
        f"JOIN {quoted_table(Project)} p ON p.id = a.project_id WHERE {cond}"
    )
    for row in fetch_rows(sql, params):
        app = app_columns.build(row)
        app.project = project_columns.build(row, app_columns.width)
        apps[app.pk] = app
    return apps
