"""The assimilator (BOINC sched/assimilator.cpp): hand each finished workunit to the project.

One pass:

1. Pick up to ``limit`` workunits of the project with assimilate_state READY.
2. For each, in its own transaction: lock the row (``SKIP LOCKED`` on PostgreSQL, so two
   workers never hand the same workunit over; SQLite serialises writers) and re-check it is
   still READY.
3. Call the app's hook (App.assimilator, a dotted path to ``hook(workunit, canonical_result,
   output_paths)``; by default ``copy_outputs``). A workunit that errored out without a
   canonical result gets ``None`` and no paths.
4. Mark it DONE, record the path the hook returned, and set transition_time to now so the
   transitioner decides about file deletion (BOINC's assimilator does the same).

A hook that raises leaves the workunit READY: the next pass retries it, and the failure is
counted in the pass's DaemonRun errors. A hook may therefore run more than once for a
workunit (a crash after the hook, before the commit) and must be idempotent; the default one is.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils.module_loading import import_string

from apps.core import clock
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.domain.states import AssimilateState, ErrorMask
from apps.work.models import OutputFile, Result, Workunit

logger = logging.getLogger(__name__)

AssimilateHook = Callable[[Workunit, Result | None, list[Path]], str | Path | None]


def copy_outputs(workunit: Workunit, canonical_result: Result | None, output_paths: list[Path]) -> str:
    """The default hook: copy the canonical outputs to ``<results_dir>/<workunit name>/``.

    Each file keeps its physical (upload) name; an errored workunit gets a file ``ERROR``
    naming its error bits instead. Files are written under a temporary name and renamed, so
    a reader never sees half a file and a second run rewrites the same content.
    """
    target = workunit.project.results_dir / workunit.name
    target.mkdir(parents=True, exist_ok=True)
    if canonical_result is None:
        bits = (
            ", ".join(b.name or "" for b in ErrorMask if b and workunit.error_mask & b)
            or "no canonical result"
        )
        _write_atomically(target / "ERROR", f"{bits}\n".encode())
        return str(target)
    for path in output_paths:
        tmp = target / f".{path.name}.tmp"
        shutil.copyfile(path, tmp)
        os.replace(tmp, target / path.name)
    return str(target)


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def assimilate_hook_for(dotted_path: str) -> AssimilateHook:
    """The app's hook; an empty path means ``copy_outputs``."""
    if not dotted_path:
        return copy_outputs
    return import_string(dotted_path)  # type: ignore[no-any-return]


def workunits_assimilate(
    *, project: Project, now: datetime | None = None, limit: int | None = None
) -> DaemonPass:
    """One assimilator pass over the project's READY workunits (steps in the module doc)."""
    now = now or clock.now()
    limit = limit or settings.COBBLESTONE_DAEMON_BATCH
    ids = list(
        Workunit.objects.filter(project=project, assimilate_state=AssimilateState.READY)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    done, failed = 0, []
    for wu_id in ids:
        try:
            done += workunit_assimilate(workunit_id=wu_id, now=now)
        except Exception as exc:
            logger.exception("assimilator: workunit %s failed", wu_id)
            failed.append(f"{wu_id}: {type(exc).__name__}: {exc}")
    message = "; ".join(failed[:5]) + (f" (+{len(failed) - 5} more)" if len(failed) > 5 else "")
    return DaemonPass(items=done, errors=len(failed), message=message)


def workunit_assimilate(*, workunit_id: int, now: datetime) -> bool:
    """Assimilate one workunit if it is still READY and no other worker has it."""
    with transaction.atomic():
        query = Workunit.objects.filter(id=workunit_id, assimilate_state=AssimilateState.READY)
        if connection.features.has_select_for_update_skip_locked:
            query = query.select_for_update(skip_locked=True, of=("self",))
        wu = query.select_related("project", "app", "canonical_result").first()
        if wu is None:
            return False
        canonical = wu.canonical_result
        paths = _output_paths(wu.project, canonical)
        path = assimilate_hook_for(wu.app.assimilator)(wu, canonical, paths)
        Workunit.objects.filter(id=wu.id).update(
            assimilate_state=AssimilateState.DONE,
            assimilated_path=str(path or "")[:500],
            transition_time=now,
        )
    return True


def _output_paths(project: Project, canonical: Result | None) -> list[Path]:
    """The canonical result's uploaded outputs; optional ones the client did not send are left out."""
    if canonical is None:
        return []
    paths = []
    for f in OutputFile.objects.filter(result=canonical, upload=True).order_by("ordinal"):
        path = project.upload_dir / f.name
        if f.optional and not path.exists():
            continue
        paths.append(path)
    return paths
