"""Results read together with their workunits by hand-written SQL (the scheduler's hot path)."""

from __future__ import annotations

from collections.abc import Sequence

from apps.core.db import ModelColumns, fetch_rows
from apps.work.models import Result, Workunit

_RESULT = ModelColumns(Result, "r")
_WORKUNIT = ModelColumns(Workunit, "w")


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
    results = []
    for row in fetch_rows(sql, params):
        result = result_cols.build(row)
        result.workunit = workunit_cols.build(row, result_cols.width)
        results.append(result)
    return results
