"""Batches and submitters: BOINC's batch, user_submit and user_submit_app tables. Batches
come before the workunits, whose batch numbers follow the batches' ids."""

from __future__ import annotations

from apps.boinc_import.domain import Mapped, Row, map_batch, map_user_submit, map_user_submit_app
from apps.boinc_import.queries import rows_insert
from apps.boinc_import.services.engine import ImportRun, KeyedTable, project_rows, table_import
from apps.boinc_import.services.source import TableQuery
from apps.submit.models import Batch, UserSubmit, UserSubmitApp

BATCH_COLUMNS = (
    "id, user_id, create_time, logical_start_time, logical_end_time, est_completion_time, njobs,"
    " fraction_done, nerror_jobs, state, completion_time, credit_estimate, credit_canonical, name, app_id,"
    " description, expire_time"
)


def _unique_names(run: ImportRun, rows: list[dict[str, object]]) -> None:
    """Batch names are unique per project here, not in BOINC: a name already taken (by an
    earlier batch or one in this read) gets its BOINC id appended."""
    names = [str(r["name"]) for r in rows]
    taken = set(Batch.objects.filter(project=run.project, name__in=names).values_list("name", flat=True))
    for row in rows:
        name = str(row["name"])
        if name in taken:
            suffix = f"#{int(str(row['id'])) - run.batches.offset}"
            row["name"] = name[: 254 - len(suffix)] + suffix
        taken.add(str(row["name"]))


def batches_import(run: ImportRun) -> None:
    def write(rows: list[tuple[Row, Mapped]]) -> None:
        values = project_rows(run, rows, run.batches)
        _unique_names(run, values)
        rows_insert(Batch, values)

    table_import(
        run,
        KeyedTable(
            table="batch",
            query=TableQuery(select=BATCH_COLUMNS, from_="batch", key="id"),
            map_row=lambda row: map_batch(row, users=run.users, apps=run.apps, now=run.now_unix),
            write=write,
            model=Batch,
            ids=run.batches,
        ),
    )


def submitters_import(run: ImportRun) -> None:
    table_import(
        run,
        KeyedTable(
            table="user_submit",
            query=TableQuery(
                select="user_id, quota, logical_start_time, submit_all, manage_all, max_jobs_in_progress",
                from_="user_submit",
                key="user_id",
                key_alias="user_id",
            ),
            map_row=lambda row: map_user_submit(row, users=run.users),
            write=lambda rows: rows_insert(UserSubmit, [m.values for _, m in rows]),
        ),
    )
    table_import(
        run,
        KeyedTable(
            table="user_submit_app",
            query=TableQuery(
                select="user_id, app_id, manage",
                from_="user_submit_app",
                key="user_id",
                key_alias="user_id",
                key2="app_id",
            ),
            map_row=lambda row: map_user_submit_app(row, users=run.users, apps=run.apps),
            write=lambda rows: rows_insert(UserSubmitApp, [m.values for _, m in rows]),
        ),
    )
