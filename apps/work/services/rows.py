"""Results read together with their workunits by hand-written SQL (the scheduler's hot path)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import DEFAULT_DB_ALIAS, connections

from apps.core.db import ModelColumns, fetch_rows
from apps.work.models import Result, Workunit

_RESULT = ModelColumns(Result, "r")
_WORKUNIT = ModelColumns(Workunit, "w")
_WORKUNIT_FIELD = Result._meta.get_field("workunit")


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
