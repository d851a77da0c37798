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
from django.db import connection, transaction

from apps.core import clock
from apps.core.db import any_of, execute, fetch_rows, quoted_table
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.protocol.filenames import partial_upload_name
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, OutputFile, Result, Workunit, WorkunitFileRef
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


def _picked(only: Sequence[int] | None, skip: list[int]) -> tuple[str, list[Any]]:
    """The condition on ``id`` of a batch's rows: just ``only``, or any but ``skip``."""
    if only is not None:
        where, params = any_of("id", list(only), "bigint")
        return f" AND {where}", params
    if skip:
        where, params = any_of("id", skip, "bigint")
        return f" AND NOT ({where})", params
    return "", []


def _skip_locked() -> str:
    return " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""


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

    def __init__(
        self, project: Project, where: str, params: list[Any], tail: str, batch: dict[int, set[int]]
    ) -> None:
        self.download_dir = project.download_dir
        self.batch = batch
        rows = fetch_rows(
            f"SELECT id, name, sticky, no_delete, gzip, file_delete_state FROM {quoted_table(InputFile)} "
            f"WHERE {where} ORDER BY id{tail}",
            params,
        )
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
            where, params = any_of("name", sticky, "text")
            rows = fetch_rows(
                f"SELECT name FROM {quoted_table(locality)} WHERE project_id = %s AND in_working_set = %s AND {where}",
                [project.id, True, *params],
            )
            self.working_set = {row[0] for row in rows}

    def _used_elsewhere(self, file_ids: list[int]) -> set[int]:
        """Those of the files a workunit outside the batch, not finished with its files, uses.
        EXISTS stops at the first: a locality file may have thousands of users."""
        where, params = any_of("f.id", file_ids, "bigint")
        outside = ""
        outside_params: list[Any] = []
        if self.batch:
            outside, outside_params = any_of(
                "r.workunit_id", sorted(set().union(*self.batch.values())), "bigint"
            )
            outside = f" AND NOT ({outside})"
        rows = fetch_rows(
            f"SELECT f.id FROM {quoted_table(InputFile)} f WHERE {where} AND EXISTS (SELECT 1 FROM "
            f"{quoted_table(WorkunitFileRef)} r JOIN {quoted_table(Workunit)} w ON w.id = r.workunit_id "
            f"WHERE r.file_id = f.id AND w.file_delete_state NOT IN (%s, %s){outside})",
            [*params, DONE, ERROR, *outside_params],
        )
        return {row[0] for row in rows}

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
        _states_write(InputFile, self.changed)


def _states_write(model: type[Any], states: dict[int, int]) -> None:
    """Each row's new file_delete_state: one UPDATE per state set (nearly always DONE alone)."""
    by_state: dict[int, list[int]] = {}
    for row_id, state in states.items():
        by_state.setdefault(state, []).append(row_id)
    for state, ids in by_state.items():
        where, params = any_of("id", ids, "bigint")
        execute(f"UPDATE {quoted_table(model)} SET file_delete_state = %s WHERE {where}", [state, *params])


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
    picked, picked_params = _picked(only, skip)
    with transaction.atomic():
        rows = fetch_rows(
            f"SELECT id, name FROM {quoted_table(Workunit)} WHERE project_id = %s AND file_delete_state = %s"
            f"{picked} ORDER BY id LIMIT %s{_skip_locked()}",
            [project.id, READY, *picked_params, limit],
        )
        taken += [wu_id for wu_id, _name in rows]
        if not rows:
            return []
        where, params = any_of("workunit_id", [wu_id for wu_id, _name in rows], "bigint")
        users: dict[int, set[int]] = {}  # file -> the batch's workunits using it
        for wu_id, file_id in fetch_rows(
            f"SELECT workunit_id, file_id FROM {quoted_table(WorkunitFileRef)} WHERE {where}", params
        ):
            users.setdefault(file_id, set()).add(wu_id)
        # A workunit named *nodelete* keeps its files (but uses them until it is through).
        deleting = {wu_id for wu_id, name in rows if "nodelete" not in name}
        uses: dict[int, list[int]] = {}
        for file_id in sorted(users):
            for wu_id in users[file_id] & deleting:
                uses.setdefault(wu_id, []).append(file_id)
        states = dict.fromkeys((wu_id for wu_id, _name in rows), DONE)
        if uses:
            where, params = any_of("id", sorted(set().union(*uses.values())), "bigint")
            lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
            files = _InputFiles(project, where, params, lock, users)
            finished: set[int] = set()
            for wu_id, _name in rows:
                ok = [
                    files.settle(files.files[i], exclude=wu_id, finished=finished)
                    for i in uses.get(wu_id, ())
                ]
                states[wu_id] = DONE if all(ok) else ERROR
                finished.add(wu_id)
            files.write()
        _states_write(Workunit, states)
    return list(states.values())


def _results_files_delete(
    project: Project, limit: int, only: Sequence[int] | None, skip: list[int], taken: list[int]
) -> list[int]:
    """Step 2; the states the results got (``only``, ``skip``, ``taken``: rows_batch_run)."""
    picked, picked_params = _picked(only, skip)
    with transaction.atomic():
        ids = [
            row[0]
            for row in fetch_rows(
                f"SELECT id FROM {quoted_table(Result)} WHERE project_id = %s AND file_delete_state = %s"
                f"{picked} ORDER BY id LIMIT %s{_skip_locked()}",
                [project.id, READY, *picked_params, limit],
            )
        ]
        taken += ids
        if not ids:
            return []
        where, params = any_of("result_id", ids, "bigint")
        names: dict[int, list[str]] = {}
        for result_id, name in fetch_rows(
            f"SELECT result_id, name FROM {quoted_table(OutputFile)} WHERE {where} AND upload = %s",
            [*params, True],
        ):
            names.setdefault(result_id, []).append(name)
        upload_dir = project.upload_dir
        states = {}
        for result_id in ids:
            paths = [
                upload_dir / n for name in names.get(result_id, ()) for n in (name, partial_upload_name(name))
            ]
            states[result_id] = DONE if all([_unlink(path) for path in paths]) else ERROR
        _states_write(Result, states)
    return list(states.values())


def _deferred_input_files_delete(project: Project, limit: int) -> int:
    """Step 3; how many files left READY (deleted, or needed again)."""
    with transaction.atomic():
        files = _InputFiles(
            project,
            "project_id = %s AND file_delete_state = %s",
            [project.id, READY, limit],
            f" LIMIT %s{_skip_locked()}",
            {},
        )
        for f in files.files.values():
            files.settle(f, exclude=None, finished=set())
        files.write()
    return sum(f.state != READY for f in files.files.values())


# The rows each step's process leaves out for a while after they failed alone.
_FAILED = {_workunits_files_delete: FailedAlone(), _results_files_delete: FailedAlone()}
