"""The assimilator (BOINC sched/assimilator.cpp): hand each finished workunit to the project.

One pass:

1. Pick up to ``limit`` workunits of the project with assimilate_state READY: those whose
   retry time has come (oldest first; at most half the pass while new ones wait), then new
   ones (no retry time, id order).
2. Claim each with a conditional UPDATE that counts the attempt and sets the retry time to a
   10-minute lease from the claim, as the validator claims; a workunit another worker claimed
   first is skipped. Should this worker die in the hook, the workunit is tried again after
   the lease.
3. In one transaction: re-check the claim still holds and call the app's hook
   (App.assimilator, a dotted path to ``hook(workunit, canonical_result, output_paths)``; by
   default ``copy_outputs``). A workunit that errored out without a canonical result gets
   ``None`` and no paths.
4. Mark it DONE, record the path the hook returned, clear the retry time and error, and set
   transition_time to now so the transitioner decides about file deletion (BOINC's
   assimilator does the same).

Times of claims and failures are the pass's ``now`` advanced by the time the pass has run, so
a workunit claimed late in a long pass gets its whole lease and a hook that fails slowly backs
off from when it failed.

A hook that raises rolls its transaction back and leaves the workunit READY with the error
text and a retry time ``retry_delay(attempts)`` away (1 minute, doubling, at most an hour);
the failure is also counted in the pass's DaemonRun, whose message (the dashboard's Daemons
table) says how many workunits wait to retry. BOINC's assimilator exits on a hook
error instead; backing off lets the other workunits through, so ``limit`` failing ones no
longer stop assimilation.

The DONE and failure writes hold only while this worker's claim does (the attempt count it
set). A hook that outlasts its lease may find the workunit claimed by another assimilator
(``run_daemons`` beside the Celery workers): that worker runs the hook again and records the
outcome, so this one writes nothing, rolls back what its hook wrote in the transaction, and
counts the workunit as taken over. A hook may thus run more than once for a workunit (so too
after a crash between the hook and the commit) and must be idempotent; the default one is.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import traceback
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils.module_loading import import_string

from apps.core import clock
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.domain.states import AssimilateState, ErrorMask
from apps.work.models import OutputFile, Result, Workunit

logger = logging.getLogger(__name__)

AssimilateHook = Callable[[Workunit, Result | None, list[Path]], str | Path | None]

# As the validator's claim. It outlasts the Celery task that took it (CELERY_TASK_TIME_LIMIT,
# 600 s from the task's start), so under Celery a lease runs out only once its worker is gone.
CLAIM_LEASE = timedelta(minutes=10)
RETRY_FIRST = timedelta(minutes=1)
RETRY_MAX = timedelta(hours=1)
ERROR_FRAMES = 5
ERROR_MAX_CHARS = 4000


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


def retry_delay(attempts: int) -> timedelta:
    """How long a workunit waits after its ``attempts``-th hook call failed.

    One minute first (a few 15-second passes: a database restart or a full disk is over
    by then), doubling, at most an hour: a hook fixed after hours of failures picks up its
    backlog within the hour without the admin doing anything, and a workunit that always
    fails costs one hook call an hour."""
    return min(RETRY_FIRST * 2 ** min(max(attempts - 1, 0), 16), RETRY_MAX)


def workunits_assimilate(
    *,
    project: Project,
    now: datetime | None = None,
    limit: int | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> DaemonPass:
    """One assimilator pass over the project's READY workunits (steps in the module doc).

    ``monotonic`` measures how long the pass has run (tests give a clock a hook advances)."""
    now = now or clock.now()
    limit = limit or settings.COBBLESTONE_DAEMON_BATCH
    at = _pass_clock(now, monotonic)
    done, failed, lost = 0, [], []
    for wu_id, attempts in _due(project, now, limit):
        claimed_at = at()
        if not _claim(wu_id, attempts, claimed_at):
            continue  # another assimilator has it
        claim = attempts + 1
        try:
            held = workunit_assimilate(workunit_id=wu_id, now=claimed_at, attempts=claim)
        except Exception as exc:
            logger.exception("assimilator: workunit %s failed; retried later", wu_id)
            held = _retry_later(wu_id, claim, at(), exc)
            if held:
                failed.append(f"{wu_id}: {type(exc).__name__}: {exc}")
        else:
            done += held
        if not held:
            logger.warning(
                "assimilator: workunit %s was taken over by another assimilator (the hook "
                "outlasted its %s lease); this pass recorded nothing",
                wu_id,
                CLAIM_LEASE,
            )
            lost.append(wu_id)
    message = _pass_message(_waiting_count(project, at()), failed, lost)
    return DaemonPass(items=done, errors=len(failed) + len(lost), message=message)


def _pass_clock(now: datetime, monotonic: Callable[[], float]) -> Callable[[], datetime]:
    """``now`` advanced by the time since this call, in whole seconds as BOINC's times: a
    pass shorter than a second writes the times of the ``now`` it was given."""
    began = monotonic()

    def at() -> datetime:
        return now + timedelta(seconds=int(monotonic() - began))

    return at


def _pass_message(waiting: int, failed: list[str], lost: list[int]) -> str:
    """The DaemonRun's note: workunits backing off, those lost to another worker, the failures."""
    notes = []
    if waiting:
        notes.append(f"{waiting} workunit(s) wait to retry a failed hook")
    if lost:
        ids = ", ".join(map(str, lost[:5])) + (" ..." if len(lost) > 5 else "")
        notes.append(f"{len(lost)} workunit(s) taken over by another assimilator in the hook: {ids}")
    if failed:
        notes.append("; ".join(failed[:5]) + (f" (+{len(failed) - 5} more)" if len(failed) > 5 else ""))
    return "; ".join(notes)


def _due(project: Project, now: datetime, limit: int) -> list[tuple[int, int]]:
    """(id, attempts) of READY workunits to try now: due retries first, so a stream of new
    workunits cannot put them off for ever, but at most half the pass while new ones wait;
    then new ones in id order; then the rest of the due retries, if there is room.

    Each read is one range of wu_assimilate_ready, already in order. The new ones are ordered
    by retry time too (all empty): PostgreSQL does not take ``IS NULL`` as fixing the column,
    so ``ORDER BY id`` alone would sort every READY row of the project."""
    ready = Workunit.objects.filter(project=project, assimilate_state=AssimilateState.READY).order_by(
        "assimilate_retry_time", "id"
    )
    columns = ("id", "assimilate_attempts")
    # Retries take at most half a pass while new work waits: a hook that fails slowly
    # (a timeout) must not fill every pass and keep the others from being assimilated.
    retries = list(ready.filter(assimilate_retry_time__lte=now).values_list(*columns)[:limit])
    share = max(limit // 2, 1)
    rows = retries[:share]
    rows += ready.filter(assimilate_retry_time__isnull=True).values_list(*columns)[: limit - len(rows)]
    return rows + retries[share : share + limit - len(rows)]


def _claim(wu_id: int, attempts: int, now: datetime) -> bool:
    """Count the attempt and lease the workunit from ``now``, the claim's time, if it is still
    READY, due, and no other worker counted an attempt since it was read (the row count says
    whether this one won). The count it sets is the claim: the pass's later writes need it."""
    claimed = (
        Workunit.objects.filter(
            id=wu_id, assimilate_state=AssimilateState.READY, assimilate_attempts=attempts
        )
        .filter(Q(assimilate_retry_time__isnull=True) | Q(assimilate_retry_time__lte=now))
        .update(assimilate_attempts=attempts + 1, assimilate_retry_time=now + CLAIM_LEASE)
    )
    return bool(claimed)


def _retry_later(wu_id: int, attempts: int, now: datetime, exc: Exception) -> bool:
    """Record the hook's failure for the admin and back off from ``now``, the failure's time;
    False if another worker has claimed the workunit since (the lease ran out in the hook)."""
    return bool(
        Workunit.objects.filter(
            id=wu_id, assimilate_state=AssimilateState.READY, assimilate_attempts=attempts
        ).update(assimilate_retry_time=now + retry_delay(attempts), assimilate_error=_error_text(exc))
    )


def _error_text(exc: Exception) -> str:
    """The error, then where it was raised (the last frames, which are the hook's)."""
    frames = "".join(traceback.format_exception(exc, limit=-ERROR_FRAMES))
    return f"{type(exc).__name__}: {exc}\n\n{frames}"[:ERROR_MAX_CHARS]


def _waiting_count(project: Project, now: datetime) -> int:
    """READY workunits backing off after a failed hook (or leased by a worker running it)."""
    return Workunit.objects.filter(
        project=project, assimilate_state=AssimilateState.READY, assimilate_retry_time__gt=now
    ).count()


class _ClaimLost(Exception):
    """Another worker claimed the workunit while this one was in the hook."""


def workunit_assimilate(*, workunit_id: int, now: datetime, attempts: int | None = None) -> bool:
    """Call the hook of a workunit this worker has claimed and mark it DONE, in one
    transaction; False if it is no longer READY or, given the ``attempts`` this worker's claim
    set, another worker has claimed it since. A hook's exception is raised."""
    mine = Q(id=workunit_id, assimilate_state=AssimilateState.READY)
    if attempts is not None:
        mine &= Q(assimilate_attempts=attempts)
    try:
        with transaction.atomic():
            wu = Workunit.objects.filter(mine).select_related("project", "app", "canonical_result").first()
            if wu is None:
                return False
            canonical = wu.canonical_result
            paths = _output_paths(wu.project, canonical)
            path = assimilate_hook_for(wu.app.assimilator)(wu, canonical, paths)
            marked = Workunit.objects.filter(mine).update(
                assimilate_state=AssimilateState.DONE,
                assimilated_path=str(path or "")[:500],
                assimilate_retry_time=None,
                assimilate_error="",
                transition_time=now,
            )
            if not marked:
                # The new holder runs the hook again and records its outcome: what this
                # run's hook wrote in the transaction goes, so it is not recorded twice.
                raise _ClaimLost
    except _ClaimLost:
        return False
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
