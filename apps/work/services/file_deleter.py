"""The file deleter (BOINC sched/file_deleter.cpp): remove files nothing needs any more.

The transitioner marks a workunit's and its results' files READY once the workunit is
assimilated and every result is over and checked. One pass, each step one transaction over
a batch whose rows it locks (``SKIP LOCKED`` on PostgreSQL, so several deleters take
different rows), reading each table once and writing it once per state it sets:

1. Workunits READY (up to ``limit``) and the input files they use, locked in id order.
   Then in workunit id order, as one workunit after the other would: an input file is
   deleted from the download area unless another workunit that is not finished with its
   files uses it (the last of them deletes it), the file is marked no_delete, or it is a
   sticky locality file still in the working set (LocalityFile.in_working_set; kept and
   marked READY for step 3). A workunit named ``*nodelete*`` keeps its files, as in BOINC.
   The workunit becomes DONE, or ERROR if a file could not be removed.
2. Results READY (up to 3 × ``limit``, BOINC's ratio for about threefold replication): their
   uploaded output files, and any upload left unfinished (.NAME.part), are deleted from the
   upload area (a result that timed out unreported too: its output-file rows exist from its
   creation); DONE or ERROR.
3. Input files kept for the working set (READY): deleted once out of it and unused.

Deleting a file that is already gone counts as done, so an interrupted pass is simply redone.
A step whose transaction fails is tried again one row at a time, so one failing row holds up
only itself; a row that fails alone is left out of the process's batches for a while
(apps.work.services.claims.FailedAlone).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.apps import apps as django_apps
from django.conf import settings
from django.db import transaction

from apps.core import clock
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.protocol.filenames import partial_upload_name
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, Result, Workunit
from apps.work.queries import (
    file_delete_states_write,
    input_files_locked,
    input_files_ready_locked,
    input_files_used_elsewhere,
    names_in_working_set,
    rows_file_delete_ready,
    uploaded_output_names,
    workunit_file_refs,
)
from apps.work.services.claims import FailedAlone, rows_batch_run

logger = logging.getLogger(__name__)

INIT, READY, DONE, ERROR = (
    int(FileDeleteState.INIT),
    int(FileDeleteState.READY),
    int(FileDeleteState.DONE),
    int(FileDeleteState.ERROR),
)


def files_delete(*, project: Project, now: datetime | None = None, limit: int | None = None) -> DaemonPass:
    """One file-deleter pass (steps in the module doc)."""
    now = now or clock.now()
    limit = limit or settings.COBBLESTONE_DAEMON_BATCH
    states: list[int] = []
    failed = 0
    for step, rows in ((_workunits_files_delete, limit), (_results_files_delete, 3 * limit)):
        done = rows_batch_run("file deleter", _FAILED[step], functools.partial(step, project, rows))
        states += [state for batch in done.results for state in batch]
        failed += len(done.failed) + len(done.abandoned)
    items = len(states) + _deferred_input_files_delete(project, limit)
    return DaemonPass(items=items, errors=states.count(ERROR) + failed)


@dataclass(slots=True)
class _File:
    id: int
    name: str
    sticky: bool
    no_delete: bool
    gzip: bool
    state: int


class _InputFiles:
    """Input files decided in one transaction: locked in id order (a creator reusing one
    waits, then sees whether it went), with whether a workunit not finished with its files
    still uses them and whether the locality working set holds them. Two deleters finishing
    the last two users of a file decide in turn, so the second sees the first finished and
    deletes it.

    ``batch``: the users of each file among the workunits step 1 is finishing, which the
    decisions follow one after the other; any other unfinished user keeps a file."""

    def __init__(self, project: Project, rows: list[tuple[Any, ...]], batch: dict[int, set[int]]) -> None:
        self.download_dir = project.download_dir
        self.batch = batch
        self.files = {
            row[0]: _File(row[0], row[1], bool(row[2]), bool(row[3]), bool(row[4]), row[5]) for row in rows
        }
        self.changed: dict[int, int] = {}
        self.used_elsewhere: set[int] = set()
        self.working_set: set[str] = set()
        open_ = [f for f in self.files.values() if not f.no_delete and f.state != DONE]
        if open_:
            self.used_elsewhere = self._used_elsewhere([f.id for f in open_])
        sticky = [f.name for f in open_ if f.sticky]
        if sticky:
            # By name through the app registry: locality sits above work in the layers.
            locality = django_apps.get_model("locality", "LocalityFile")
            self.working_set = names_in_working_set(locality, project.id, sticky)

    def _used_elsewhere(self, file_ids: list[int]) -> set[int]:
        """Those of the files a workunit outside the batch, not finished with its files, uses.
        EXISTS stops at the first: a locality file may have thousands of users."""
        outside = sorted(set().union(*self.batch.values())) if self.batch else []
        return input_files_used_elsewhere(file_ids, outside)

    def settle(self, f: _File, *, exclude: int | None, finished: set[int]) -> bool:
        """Delete ``f`` if nothing needs it, keep it otherwise; False if deleting failed.
        ``finished``: workunits of the batch already through, ``exclude`` the current one."""
        if f.no_delete or f.state == DONE:
            return True
        batch_users = (w for w in self.batch.get(f.id, ()) if w != exclude and w not in finished)
        if f.id in self.used_elsewhere or any(batch_users):
            # A workunit still using it deletes it when it finishes.
            if f.state == READY:
                self._set(f, INIT)
            return True
        if f.sticky and f.name in self.working_set:
            if f.state != READY:
                self._set(f, READY)
            return True
        ok = _unlink(self.download_dir / f.name) and (
            not f.gzip or _unlink(self.download_dir / f"{f.name}.gz")
        )
        self._set(f, DONE if ok else ERROR)
        return ok

    def _set(self, f: _File, state: int) -> None:
        f.state = self.changed[f.id] = state

    def write(self) -> None:
        file_delete_states_write(InputFile, self.changed)


def _unlink(path: Path) -> bool:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        logger.exception("file deleter: cannot delete %s", path)
        return False
    return True


def _workunits_files_delete(
    project: Project, limit: int, only: Sequence[int] | None, skip: list[int], taken: list[int]
) -> list[int]:
    """Step 1; the states the workunits got (``only``, ``skip``, ``taken``: rows_batch_run)."""
    with transaction.atomic():
        rows = rows_file_delete_ready(Workunit, project.id, "id, name", only=only, skip=skip, limit=limit)
        taken += [wu_id for wu_id, _name in rows]
        if not rows:
            return []
        users: dict[int, set[int]] = {}  # file -> the batch's workunits using it
        for wu_id, file_id in workunit_file_refs([wu_id for wu_id, _name in rows]):
            users.setdefault(file_id, set()).add(wu_id)
        # A workunit named *nodelete* keeps its files (but uses them until it is through).
        deleting = {wu_id for wu_id, name in rows if "nodelete" not in name}
        uses: dict[int, list[int]] = {}
        for file_id in sorted(users):
            for wu_id in users[file_id] & deleting:
                uses.setdefault(wu_id, []).append(file_id)
        states = dict.fromkeys((wu_id for wu_id, _name in rows), DONE)
        if uses:
            files = _InputFiles(project, input_files_locked(sorted(set().union(*uses.values()))), users)
            finished: set[int] = set()
            for wu_id, _name in rows:
                ok = [
                    files.settle(files.files[i], exclude=wu_id, finished=finished)
                    for i in uses.get(wu_id, ())
                ]
                states[wu_id] = DONE if all(ok) else ERROR
                finished.add(wu_id)
            files.write()
        file_delete_states_write(Workunit, states)
    return list(states.values())


def _results_files_delete(
    project: Project, limit: int, only: Sequence[int] | None, skip: list[int], taken: list[int]
) -> list[int]:
    """Step 2; the states the results got (``only``, ``skip``, ``taken``: rows_batch_run)."""
    with transaction.atomic():
        ids = [
            row[0]
            for row in rows_file_delete_ready(Result, project.id, "id", only=only, skip=skip, limit=limit)
        ]
        taken += ids
        if not ids:
            return []
        names: dict[int, list[str]] = {}
        for result_id, name in uploaded_output_names(ids):
            names.setdefault(result_id, []).append(name)
        upload_dir = project.upload_dir
        states = {}
        for result_id in ids:
            paths = [
                upload_dir / n for name in names.get(result_id, ()) for n in (name, partial_upload_name(name))
            ]
            states[result_id] = DONE if all([_unlink(path) for path in paths]) else ERROR
        file_delete_states_write(Result, states)
    return list(states.values())


def _deferred_input_files_delete(project: Project, limit: int) -> int:
    """Step 3; how many files left READY (deleted, or needed again)."""
    with transaction.atomic():
        files = _InputFiles(project, input_files_ready_locked(project.id, limit), {})
        for f in files.files.values():
            files.settle(f, exclude=None, finished=set())
        files.write()
    return sum(f.state != READY for f in files.files.values())


# The rows each step's process leaves out for a while after they failed alone.
_FAILED = {_workunits_files_delete: FailedAlone(), _results_files_delete: FailedAlone()}
