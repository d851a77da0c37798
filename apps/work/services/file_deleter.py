"""The file deleter (BOINC sched/file_deleter.cpp): remove files nothing needs any more.

The transitioner marks a workunit's and its results' files READY once the workunit is
assimilated and every result is over and checked. One pass:

1. Workunits READY (up to ``limit``), each in a transaction with the row locked: its input
   files are deleted from the download area unless another workunit that is not finished
   with its files uses them (that one deletes them later), the file is marked no_delete, or
   it is a sticky locality file still in the working set (LocalityFile.in_working_set;
   kept and marked READY for step 3). A workunit named ``*nodelete*`` keeps its files, as
   in BOINC. The workunit becomes DONE, or ERROR if a file could not be removed.
2. Results READY (up to 3 × ``limit``, BOINC's ratio for about threefold replication): their
   uploaded output files, and any upload left unfinished (.NAME.part), are deleted from the
   upload area (a result that timed out unreported too: its output-file rows exist from its
   creation); DONE or ERROR.
3. Input files kept for the working set (READY): deleted once out of it and unused.

Deleting a file that is already gone counts as done, so an interrupted pass is simply redone.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

from django.apps import apps as django_apps
from django.conf import settings
from django.db import connection, transaction

from apps.core import clock
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.protocol.filenames import partial_upload_name
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef

logger = logging.getLogger(__name__)

_FINISHED = (FileDeleteState.DONE, FileDeleteState.ERROR)


def files_delete(*, project: Project, now: datetime | None = None, limit: int | None = None) -> DaemonPass:
    """One file-deleter pass (steps in the module doc)."""
    now = now or clock.now()
    limit = limit or settings.COBBLESTONE_DAEMON_BATCH
    wu_ids = list(
        Workunit.objects.filter(project=project, file_delete_state=FileDeleteState.READY)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    items = errors = 0
    for wu_id in wu_ids:
        state = workunit_files_delete(workunit_id=wu_id)
        items += state is not None
        errors += state == FileDeleteState.ERROR
    result_ids = list(
        Result.objects.filter(project=project, file_delete_state=FileDeleteState.READY)
        .order_by("id")
        .values_list("id", flat=True)[: 3 * limit]
    )
    for result_id in result_ids:
        state = result_files_delete(project=project, result_id=result_id)
        items += state is not None
        errors += state == FileDeleteState.ERROR
    items += _deferred_input_files_delete(project, limit)
    return DaemonPass(items=items, errors=errors)


def _lock(query):  # type: ignore[no-untyped-def]
    if connection.features.has_select_for_update_skip_locked:
        return query.select_for_update(skip_locked=True, of=("self",))
    return query


def workunit_files_delete(*, workunit_id: int) -> FileDeleteState | None:
    """Delete one READY workunit's input files; the new state, or None if not READY (any more)."""
    with transaction.atomic():
        wu = _lock(Workunit.objects.filter(id=workunit_id, file_delete_state=FileDeleteState.READY)).first()
        if wu is None:
            return None
        state = FileDeleteState.DONE
        if "nodelete" not in wu.name:
            file_ids = WorkunitFileRef.objects.filter(workunit=wu).values_list("file_id", flat=True)
            # Locked in id order: two deleters finishing the last two users of a file decide in
            # turn, so the second sees the first finished and deletes it.
            for f in InputFile.objects.select_for_update().filter(id__in=list(file_ids)).order_by("id"):
                if not _input_file_settle(f, exclude_workunit=wu.id):
                    state = FileDeleteState.ERROR
        Workunit.objects.filter(id=wu.id).update(file_delete_state=state)
    return state


def _input_file_settle(f: InputFile, *, exclude_workunit: int | None) -> bool:
    """Delete ``f`` if nothing needs it, keep it otherwise; False if deleting failed."""
    if f.no_delete or f.file_delete_state == FileDeleteState.DONE:
        return True
    users = WorkunitFileRef.objects.filter(file=f).exclude(workunit__file_delete_state__in=_FINISHED)
    if exclude_workunit is not None:
        users = users.exclude(workunit_id=exclude_workunit)
    if users.exists():
        # A workunit still using it deletes it when it finishes.
        if f.file_delete_state == FileDeleteState.READY:
            InputFile.objects.filter(id=f.id).update(file_delete_state=FileDeleteState.INIT)
        return True
    if f.sticky and _in_working_set(f):
        if f.file_delete_state != FileDeleteState.READY:
            InputFile.objects.filter(id=f.id).update(file_delete_state=FileDeleteState.READY)
        return True
    ok = _unlink(f.project.download_dir / f.name) and (
        not f.gzip or _unlink(f.project.download_dir / f"{f.name}.gz")
    )
    InputFile.objects.filter(id=f.id).update(
        file_delete_state=FileDeleteState.DONE if ok else FileDeleteState.ERROR
    )
    return ok


def _in_working_set(f: InputFile) -> bool:
    # Looked up by name through the app registry: locality sits above work in the layers.
    locality_file = django_apps.get_model("locality", "LocalityFile")
    return bool(
        locality_file.objects.filter(project_id=f.project_id, name=f.name, in_working_set=True).exists()
    )


def _unlink(path: Path) -> bool:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        logger.exception("file deleter: cannot delete %s", path)
        return False
    return True


def result_files_delete(*, project: Project, result_id: int) -> FileDeleteState | None:
    """Delete one READY result's uploaded outputs, and any upload the client left unfinished;
    the new state, or None if not READY."""
    names = OutputFile.objects.filter(result_id=result_id, upload=True).values_list("name", flat=True)
    paths = [project.upload_dir / n for name in names for n in (name, partial_upload_name(name))]
    ok = all([_unlink(path) for path in paths])
    state = FileDeleteState.DONE if ok else FileDeleteState.ERROR
    updated = Result.objects.filter(id=result_id, file_delete_state=FileDeleteState.READY).update(
        file_delete_state=state
    )
    return state if updated else None


def _deferred_input_files_delete(project: Project, limit: int) -> int:
    ids = list(
        InputFile.objects.filter(project=project, file_delete_state=FileDeleteState.READY)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    deleted = 0
    for file_id in ids:
        with transaction.atomic():
            f = _lock(InputFile.objects.filter(id=file_id, file_delete_state=FileDeleteState.READY)).first()
            if f is None:
                continue
            _input_file_settle(f, exclude_workunit=None)
            f.refresh_from_db(fields=["file_delete_state"])
            deleted += f.file_delete_state != FileDeleteState.READY
    return deleted
