"""db_purge (BOINC sched/db_purge.cpp): archive, then delete, finished workunits and results.

A workunit is purged when its files are deleted (file_delete_state DONE), its last report
is at least ``min_age_days`` old (Project.purge_min_age_days; the ``run_daemons
--purge-min-age-days`` option overrides it) and, for a work-sequence step, its sequence has
ended. One pass, holding a per-project lock so a single purger writes the archive:

1. Pick up to ``chunk`` such workunits, lock them (``SKIP LOCKED`` on PostgreSQL).
2. Append one JSON line per workunit, with its results, to the day's archive file and sync it.
3. Delete the workunits (their results, output-file rows and input-file references go too)
   in the same transaction; repeat until ``limit`` workunits or nothing is left.
4. Drop input-file rows whose files are deleted and that no workunit references, and
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
keep the last line per workunit id.
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Model, Q

from apps.core import clock
from apps.projects.models import DaemonRun, Project
from apps.projects.services import DaemonPass, daemon_lock
from apps.work.domain.states import FileDeleteState, SequenceState
from apps.work.models import InputFile, Workunit

ARCHIVE_FORMAT = 1
CHUNK = 100
DAEMON_RUN_KEEP = timedelta(days=30)


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
        purged = 0
        while purged < limit:
            n = _purge_chunk(project, cutoff, now, min(CHUNK, limit - purged))
            if not n:
                break
            purged += n
        orphans = _orphan_input_files_delete(project)
        DaemonRun.objects.filter(project=project, started__lt=now - DAEMON_RUN_KEEP).delete()
    return DaemonPass(items=purged + orphans, message=f"{purged} workunits archived")


def purgeable_workunits(project: Project, cutoff: datetime) -> Any:
    return (
        Workunit.objects.filter(
            project=project, file_delete_state=FileDeleteState.DONE, create_time__lte=cutoff
        )
        .filter(Q(sequence__isnull=True) | Q(sequence__state__in=[SequenceState.ENDED, SequenceState.ERROR]))
        .exclude(results__received_time__gt=cutoff)
    )


def _purge_chunk(project: Project, cutoff: datetime, now: datetime, n: int) -> int:
    ids = list(purgeable_workunits(project, cutoff).order_by("id").values_list("id", flat=True)[:n])
    if not ids:
        return 0
    with transaction.atomic():
        query = Workunit.objects.filter(id__in=ids, file_delete_state=FileDeleteState.DONE)
        if connection.features.has_select_for_update_skip_locked:
            query = query.select_for_update(skip_locked=True, of=("self",))
        wus = list(query.order_by("id").prefetch_related("results__output_files", "file_refs__file"))
        if not wus:
            return 0
        archive_append(archive_path(project, now.date()), [workunit_record(wu, now) for wu in wus])
        Workunit.objects.filter(id__in=[wu.id for wu in wus]).delete()
    return len(wus)


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


def _columns(row: Model) -> dict[str, Any]:
    return {f.attname: _json_value(getattr(row, f.attname)) for f in row._meta.concrete_fields}


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def workunit_record(wu: Workunit, now: datetime) -> dict[str, Any]:
    return {
        "format": ARCHIVE_FORMAT,
        "archived_at": now.isoformat(),
        "workunit": _columns(wu),
        "input_files": [
            {
                "name": ref.file.name,
                "md5_cksum": ref.file.md5_cksum,
                "nbytes": ref.file.nbytes,
                "open_name": ref.open_name,
            }
            for ref in wu.file_refs.all()
        ],
        "results": [
            {
                **_columns(r),
                "output_files": [
                    {"name": f.name, "nbytes": f.nbytes, "md5_cksum": f.md5_cksum, "uploaded": f.uploaded}
                    for f in r.output_files.all()
                ],
            }
            for r in wu.results.all()
        ],
    }


def _orphan_input_files_delete(project: Project) -> int:
    """Input-file rows whose file is deleted and that no workunit references any more."""
    deleted, _ = InputFile.objects.filter(
        project=project, file_delete_state=FileDeleteState.DONE, refs__isnull=True
    ).delete()
    return deleted
