"""BOINC's locality trigger directories, for projects that keep their BOINC daemons.

BOINC's design uses four directories under ``PROJECT/locality_scheduling/``:

* ``need_work/X``: written by the scheduler, read (and removed) by a work generator;
* ``no_work_available/X``: written by the generator, read by the scheduler (skip the wait);
* ``files_no_work/X``: written by the scheduler, read by the working-set manager;
* ``file_working_set/X``: written by the working-set manager, read by the scheduler.

Cobblestone keeps the same state in the database (``LocalityFile`` flags, ``NeedWork``
rows); when a project sets ``locality_trigger_dir`` the files are written and read as
well, so existing BOINC work generators and working-set managers keep working. A
trigger is an empty file named after the large file. Every operation logs and carries
on when the file system refuses: a trigger must never fail a scheduler RPC.
"""

from __future__ import annotations

import logging
import os
from enum import StrEnum
from pathlib import Path

from apps.projects.models import Project
from apps.work.domain.locality_names import validate_locality_file_name

logger = logging.getLogger(__name__)

# A listing larger than this is truncated (a runaway generator must not stall the RPC).
MAX_LISTED = 100_000


class Trigger(StrEnum):
    NEED_WORK = "need_work"
    NO_WORK_AVAILABLE = "no_work_available"
    FILES_NO_WORK = "files_no_work"
    WORKING_SET = "file_working_set"


def trigger_root(project: Project) -> Path | None:
    """The project's trigger directory, or None; a relative setting is under its data area."""
    value = project.locality_trigger_dir.strip()
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() else project.data_dir / path


def _path(root: Path, kind: Trigger, name: str) -> Path | None:
    try:
        validate_locality_file_name(name)  # no separators, dots or control characters
    except ValueError:
        logger.warning("locality trigger: refusing unsafe file name %r", name)
        return None
    return root / kind.value / name


def trigger_touch(root: Path | None, kind: Trigger, name: str) -> None:
    if root is None:
        return
    path = _path(root, kind, name)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError as exc:
        logger.warning("locality trigger: cannot write %s: %s", path, exc)


def trigger_remove(root: Path | None, kind: Trigger, name: str) -> None:
    if root is None:
        return
    path = _path(root, kind, name)
    if path is None:
        return
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        logger.warning("locality trigger: cannot remove %s: %s", path, exc)


def trigger_exists(root: Path | None, kind: Trigger, name: str) -> bool:
    if root is None:
        return False
    path = _path(root, kind, name)
    return path is not None and path.exists()


def trigger_names(root: Path | None, kind: Trigger) -> set[str]:
    """Names present in one trigger directory (valid locality names only)."""
    if root is None:
        return set()
    names: set[str] = set()
    try:
        with os.scandir(root / kind.value) as entries:
            for entry in entries:
                if len(names) >= MAX_LISTED:
                    logger.warning("locality trigger: %s has more than %d entries", root / kind, MAX_LISTED)
                    break
                if _path(root, kind, entry.name) is not None:
                    names.add(entry.name)
    except FileNotFoundError:
        return set()
    except OSError as exc:
        logger.warning("locality trigger: cannot list %s: %s", root / kind.value, exc)
    return names
