"""db_purge (BOINC sched/db_purge.cpp): archive, then delete, finished workunits and results.

A workunit is purged when its files are deleted (file_delete_state DONE), its last report
is at least ``min_age_days`` old (Project.purge_min_age_days; the ``run_daemons
--purge-min-age-days`` option overrides it) and, for a work-sequence step, its sequence has
ended. One pass, holding a per-project lock so a single purger writes the archive, in one
transaction:

1. Pick up to ``limit`` such workunits in id order, locked (``SKIP LOCKED`` on PostgreSQL).
2. Read their input files, results and the results' output files, one query each.
3. Append one JSON line per workunit, with its results, to the day's archive file and sync it.
4. Delete the workunits, their results, output-file rows and input-file references, one
   statement per table (the links to them that their foreign keys set to null on delete,
   such as a work sequence's head, first).
5. Drop input-file rows whose files are deleted and that no workunit references, and
   DaemonRun records older than ``DAEMON_RUN_KEEP``.

Archive format: ``<archive_dir>/purged_YYYY-MM-DD.jsonl.gz`` (UTC day of the purge), a gzip
file of one or more members (each pass appends one; ``zcat``, ``gzip.open`` and ``zless``
read them as one stream). Each line is a JSON object::

    {"format": 1, "archived_at": "<ISO time>",
     "workunit": {<every Workunit column by attribute name, e.g. "app_id", "canonical_result_id">},
     "input_files": [{"name", "md5_cksum", "nbytes", "open_name"}],
     "results": [{<every Result column>, "output_files": [{"name", "nbytes", "md5_cksum", "uploaded"}]}]}

Times are ISO 8601 in UTC; state fields keep BOINC's numbers. A pass interrupted between the
archive write and the commit archives those workunits again next time, so a reader should
keep the last line per workunit id. A batch whose transaction fails is tried again one
workunit per transaction (each its own gzip member), so one failing workunit holds up only
itself; one that fails alone is left out of the process's batches for a while
(apps.work.services.claims.FailedAlone).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections, models, transaction
from django.db.models import ForeignObjectRel

from apps.core import clock
from apps.core.db import ModelColumns, any_of, db_datetime, execute, fetch_rows, quoted_table
from apps.projects.models import DaemonRun, Project
from apps.projects.services import DaemonPass, daemon_lock
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from apps.work.services.claims import FailedAlone, rows_batch_run
from apps.work.services.extensions import purge_holds

ARCHIVE_FORMAT = 1
DAEMON_RUN_KEEP = timedelta(days=30)
DONE = int(FileDeleteState.DONE)

# Hand-written statements (apps.core.db): through the ORM, the prefetches, the model
# instances and the delete collector cost several times the SQL.
_WORKUNIT = ModelColumns(Workunit, "w")
_RESULT = ModelColumns(Result, "r")


def workunits_purge(
    *,
    project: Project,
    now: datetime | None = None,
    limit: int | None = None,
    min_age_days: float | None = None,
) -> DaemonPass:
    """One db_purge pass (steps in the module doc)."""
    now = now or clock.now()
    limit = limit or settings.COBBLESTONE_DAEMON_BATCH
    days = project.purge_min_age_days if min_age_days is None else min_age_days
    cutoff = now - timedelta(days=days)
    with daemon_lock(f"work.purge:{project.pk}") as held:
        if not held:
            return DaemonPass(message="skipped: another purge pass is running")
        done = rows_batch_run(
            "db_purge",
            _FAILED,
            lambda only, skip, taken: _purge(project, cutoff, now, limit, only, skip, taken),
        )
        purged = sum(done.results)
        orphans = _orphan_input_files_delete(project)
        DaemonRun.objects.filter(project=project, started__lt=now - DAEMON_RUN_KEEP).delete()
    errors = len(done.failed) + len(done.abandoned)
    return DaemonPass(items=purged + orphans, errors=errors, message=f"{purged} workunits archived")


# The workunits this process leaves out for a while after they failed alone.
_FAILED = FailedAlone()


def _purge(
    project: Project,
    cutoff: datetime,
    now: datetime,
    limit: int,
    only: Sequence[int] | None,
    skip: list[int],
    taken: list[int],
) -> int:
    """Steps 1-4 in one transaction (``only``, ``skip``, ``taken``: rows_batch_run); how many
    workunits it purged."""
    with transaction.atomic():
        wus = _purgeable_lock(project, cutoff, limit, only, skip)
        taken += [wu.id for wu in wus]
        if wus:
            archive_append(archive_path(project, now.date()), _records(wus, now))
            _workunits_delete([wu.id for wu in wus])
    return len(wus)


def _purgeable_lock(
    project: Project, cutoff: datetime, limit: int, only: Sequence[int] | None, skip: list[int]
) -> list[Workunit]:
    """Step 1: the workunits to purge, every column, in id order (just ``only``, or any but
    ``skip``)."""
    picked = ""
    picked_params: list[Any] = []
    if only is not None or skip:
        picked, picked_params = any_of("w.id", list(only if only is not None else skip), "bigint")
        picked = f" AND {picked}" if only is not None else f" AND NOT ({picked})"
    # Kept: workunits an app above work holds (a step of a sequence that has not ended).
    holds = purge_holds()
    held = "".join(f"AND NOT ({sql}) " for sql, _ in holds)
    lock = " FOR UPDATE OF w SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    rows = fetch_rows(
        f"SELECT {_WORKUNIT.sql()} FROM {quoted_table(Workunit)} w "
        "WHERE w.project_id = %s AND w.file_delete_state = %s AND w.create_time <= %s "
        f"{held}"
        f"AND NOT EXISTS (SELECT 1 FROM {quoted_table(Result)} r WHERE r.workunit_id = w.id AND r.received_time > %s)"
        f"{picked} ORDER BY w.id LIMIT %s{lock}",
        [
            project.id,
            DONE,
            db_datetime(cutoff),
            *(param for _, params in holds for param in params),
            db_datetime(cutoff),
            *picked_params,
            limit,
        ],
    )
    conn = connections[DEFAULT_DB_ALIAS]
    return [_WORKUNIT.build(row, 0, conn) for row in rows]


def archive_path(project: Project, day: date) -> Path:
    return project.archive_dir / f"purged_{day:%Y-%m-%d}.jsonl.gz"


def archive_append(path: Path, records: list[dict[str, Any]]) -> None:
    """Append the records as one gzip member and sync it before the rows are deleted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records).encode()
    with open(path, "ab") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb") as member:
            member.write(data)
        raw.flush()
        os.fsync(raw.fileno())


def archive_read(path: Path) -> list[dict[str, Any]]:
    """Every record of an archive file (for tools and tests)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@functools.cache
def _dated(model: type[models.Model]) -> tuple[str, ...]:
    """The date and time columns, which the archive writes in ISO 8601."""
    return tuple(f.attname for f in model._meta.concrete_fields if isinstance(f, models.DateField))


def row_record(row: models.Model, columns: ModelColumns) -> dict[str, Any]:
    """Every column by attribute name, with the values the ORM reads (ModelColumns converts)."""
    values = row.__dict__
    record = {name: values[name] for name in columns.names}
    for name in _dated(columns.model):
        if record[name] is not None:
            record[name] = record[name].isoformat()
    return record


def _records(wus: list[Workunit], now: datetime) -> list[dict[str, Any]]:
    """Step 2: the archive's records of ``wus`` (format in the module doc)."""
    where, params = any_of("r.workunit_id", [wu.id for wu in wus], "bigint")
    inputs: dict[int, list[dict[str, Any]]] = {}
    for wu_id, name, md5, nbytes, open_name in fetch_rows(
        f"SELECT r.workunit_id, f.name, f.md5_cksum, f.nbytes, r.open_name FROM {quoted_table(WorkunitFileRef)} r "
        f"JOIN {quoted_table(InputFile)} f ON f.id = r.file_id WHERE {where} ORDER BY r.workunit_id, r.ordinal",
        params,
    ):
        inputs.setdefault(wu_id, []).append(
            {"name": name, "md5_cksum": md5, "nbytes": nbytes, "open_name": open_name}
        )
    outputs: dict[int, list[dict[str, Any]]] = {}
    for result_id, name, nbytes, md5, uploaded in fetch_rows(
        f"SELECT f.result_id, f.name, f.nbytes, f.md5_cksum, f.uploaded FROM {quoted_table(OutputFile)} f "
        f"JOIN {quoted_table(Result)} r ON r.id = f.result_id WHERE {where} ORDER BY f.result_id, f.ordinal, f.id",
        params,
    ):
        outputs.setdefault(result_id, []).append(
            {"name": name, "nbytes": nbytes, "md5_cksum": md5, "uploaded": bool(uploaded)}
        )
    conn = connections[DEFAULT_DB_ALIAS]
    results: dict[int, list[dict[str, Any]]] = {}
    for row in fetch_rows(
        f"SELECT {_RESULT.sql()} FROM {quoted_table(Result)} r WHERE {where} ORDER BY r.id", params
    ):
        result = _RESULT.build(row, 0, conn)
        record = row_record(result, _RESULT)
        record["output_files"] = outputs.get(result.id, [])
        results.setdefault(result.workunit_id, []).append(record)
    archived_at = now.isoformat()
    return [
        {
            "format": ARCHIVE_FORMAT,
            "archived_at": archived_at,
            "workunit": row_record(wu, _WORKUNIT),
            "input_files": inputs.get(wu.id, []),
            "results": results.get(wu.id, []),
        }
        for wu in wus
    ]


_HANDLED: dict[type[models.Model], set[type[models.Model]]] = {
    Workunit: {Result, WorkunitFileRef},
    Result: {OutputFile},
    InputFile: {WorkunitFileRef},
}


@functools.cache
def _links_to(model: type[models.Model]) -> tuple[tuple[type[models.Model], str], ...]:
    """(model, column) of the foreign keys to ``model`` that its deletion sets to null. The
    rows of the tables in ``_HANDLED`` are deleted (or, for input files, checked absent) by
    the statements here; any other rule is refused rather than left to a failing key."""
    links = []
    for rel in model._meta.get_fields(include_hidden=True):
        if not rel.auto_created or rel.concrete or rel.related_model in _HANDLED[model]:
            continue
        rel = cast(ForeignObjectRel, rel)  # auto-created and not concrete: a reverse relation
        if rel.on_delete is not models.SET_NULL:
            raise RuntimeError(f"db_purge does not handle {rel.field.model.__name__}.{rel.field.name}")
        links.append((rel.field.model, rel.field.column))
    return tuple(links)


def _links_clear(model: type[models.Model], ids: list[int], purged: list[int]) -> None:
    """SET_NULL, as the ORM's delete would, on rows that are not being purged themselves."""
    for related, column in _links_to(model):
        where, params = any_of(column, ids, "bigint")
        if related is Workunit:
            kept, kept_params = any_of("id", purged, "bigint")
            where, params = f"{where} AND NOT ({kept})", [*params, *kept_params]
        execute(f"UPDATE {quoted_table(related)} SET {column} = NULL WHERE {where}", params)


def _workunits_delete(wu_ids: list[int]) -> None:
    """Step 4. The foreign keys are deferred to the commit (Django creates them so), so the
    workunits and results, which point at each other, go in any order."""
    where, params = any_of("workunit_id", wu_ids, "bigint")
    result_ids = [
        row[0] for row in fetch_rows(f"DELETE FROM {quoted_table(Result)} WHERE {where} RETURNING id", params)
    ]
    if result_ids:
        by_result, result_params = any_of("result_id", result_ids, "bigint")
        execute(f"DELETE FROM {quoted_table(OutputFile)} WHERE {by_result}", result_params)
        _links_clear(Result, result_ids, wu_ids)
    execute(f"DELETE FROM {quoted_table(WorkunitFileRef)} WHERE {where}", params)
    _links_clear(Workunit, wu_ids, wu_ids)
    by_id, id_params = any_of("id", wu_ids, "bigint")
    execute(f"DELETE FROM {quoted_table(Workunit)} WHERE {by_id}", id_params)


def _orphan_input_files_delete(project: Project) -> int:
    """Input-file rows whose file is deleted and that no workunit references any more. A
    creator reusing one sets it back to INIT first, under its lock, so the state is checked
    in the DELETE itself."""
    with transaction.atomic():
        ids = [
            row[0]
            for row in fetch_rows(
                f"DELETE FROM {quoted_table(InputFile)} WHERE project_id = %s AND file_delete_state = %s AND NOT EXISTS "
                f"(SELECT 1 FROM {quoted_table(WorkunitFileRef)} r WHERE r.file_id = {quoted_table(InputFile)}.id) RETURNING id",
                [project.id, DONE],
            )
        ]
        if ids:
            _links_clear(InputFile, ids, [])
    return len(ids)
