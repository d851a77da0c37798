"""db_purge (BOINC sched/db_purge.cpp): archive, then delete, finished workunits and results.

A workunit is purged when its files are deleted (file_delete_state DONE), its last report
is at least ``min_age_days`` old (Project.purge_min_age_days; the ``run_daemons
--purge-min-age-days`` option overrides it) and no app above work holds it: a work-sequence
step until its sequence has ended, a batch's job until the batch is retired and its outputs
deleted. One pass, holding a per-project lock so a single purger writes the archive, in one
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
from django.db import models, transaction
from django.db.models import ForeignObjectRel

from apps.core import clock
from apps.core.db import ModelColumns
from apps.projects.models import DaemonRun, Project
from apps.projects.services import DaemonPass, daemon_lock
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef
from apps.work.queries import (
    column_set_null,
    orphan_input_files_delete,
    result_outputs_for_archive,
    results_delete,
    results_of_workunits_locked,
    rows_delete,
    workunit_inputs_for_archive,
    workunits_purgeable,
)
from apps.work.services.claims import FailedAlone, rows_batch_run
from apps.work.services.extensions import purge_holds

ARCHIVE_FORMAT = 1
DAEMON_RUN_KEEP = timedelta(days=30)
DONE = int(FileDeleteState.DONE)

# Hand-written statements (apps.work.queries): through the ORM, the prefetches, the model
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
    # Kept: workunits an app above work holds (a step of a sequence that has not ended, a
    # job of a batch not yet retired).
    return workunits_purgeable(
        project.id, cutoff, limit, _WORKUNIT, only=only, skip=skip, holds=purge_holds()
    )


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
    ids = [wu.id for wu in wus]
    inputs: dict[int, list[dict[str, Any]]] = {}
    for wu_id, name, md5, nbytes, open_name in workunit_inputs_for_archive(ids):
        inputs.setdefault(wu_id, []).append(
            {"name": name, "md5_cksum": md5, "nbytes": nbytes, "open_name": open_name}
        )
    outputs: dict[int, list[dict[str, Any]]] = {}
    for result_id, name, nbytes, md5, uploaded in result_outputs_for_archive(ids):
        outputs.setdefault(result_id, []).append(
            {"name": name, "nbytes": nbytes, "md5_cksum": md5, "uploaded": bool(uploaded)}
        )
    results: dict[int, list[dict[str, Any]]] = {}
    for result in results_of_workunits_locked(ids, _RESULT, lock=False):
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
        column_set_null(related, column, ids, purged if related is Workunit else [])


def _workunits_delete(wu_ids: list[int]) -> None:
    """Step 4. The foreign keys are deferred to the commit (Django creates them so), so the
    workunits and results, which point at each other, go in any order."""
    result_ids = results_delete(wu_ids)
    if result_ids:
        rows_delete(OutputFile, "result_id", result_ids)
        _links_clear(Result, result_ids, wu_ids)
    rows_delete(WorkunitFileRef, "workunit_id", wu_ids)
    _links_clear(Workunit, wu_ids, wu_ids)
    rows_delete(Workunit, "id", wu_ids)


def _orphan_input_files_delete(project: Project) -> int:
    """Input-file rows whose file is deleted and that no workunit references any more. A
    creator reusing one sets it back to INIT first, under its lock, so the state is checked
    in the DELETE itself."""
    with transaction.atomic():
        ids = orphan_input_files_delete(project.id)
        if ids:
            _links_clear(InputFile, ids, [])
    return len(ids)
