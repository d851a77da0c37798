"""The assimilator (BOINC sched/assimilator.cpp): hand each finished workunit to the project.

One pass:

1. Claim up to ``limit`` workunits of the project with assimilate_state READY, in one
   transaction: read those whose retry time has come (oldest first; at most half the pass
   while new ones wait), then new ones (no retry time, id order), locked with ``SKIP
   LOCKED`` on PostgreSQL so that another assimilator reading at the same time takes others;
   then one UPDATE counts an attempt on each and sets its retry time to a short lease
   (apps.work.services.claims). The attempt count it sets is this worker's claim.
2. Read the claimed workunits with their apps and canonical results in one query, and the
   canonical results' uploaded outputs in another.
3. In one transaction, call the app's hook once per workunit, as BOINC calls
   assimilate_handler (App.assimilator, a dotted path to ``hook(workunit, canonical_result,
   output_paths)``; by default ``copy_outputs``; with App.assimilate_script, BOINC's script
   assimilator, ``script_assimilate``). A workunit that errored out without a canonical
   result gets ``None`` and no paths.
4. Mark the workunits whose hook returned DONE in one UPDATE (the path the hook returned,
   no retry time or error, and transition_time now so the transitioner decides about file
   deletion, as BOINC's assimilator does), and record the failures in another; both write
   only rows whose claim this worker still holds. Commit.

Times of claims and failures are the pass's ``now`` advanced by the time the pass has run.
When that clock moves on (it counts whole seconds, as BOINC's times), steps 3-4 commit what
they have: a hook that fails slowly backs off from when it failed, and a transaction holds
SQLite's write lock for about a second at most. Once half a lease has passed since the
claims were last leased, the workunits not yet handed over get a new lease from the new
time, in one statement: a workunit reached late in a long pass is still this worker's.

A transaction of steps 3-4 that fails (a statement of step 4, its commit) is rolled back and
its workunits handed over again one per transaction. A pass that loses its database
connection stops; the workunits it had claimed and not handed over are released at the
process's next pass, or by their lease if the process died (apps.work.services.claims).

A hook that raises has its database writes rolled back (a savepoint opened just before its
first statement, so a hook that never touches the database costs none) and its on_commit
callbacks dropped, and leaves the workunit READY with the error text and a retry time
``retry_delay(attempts)`` away (1 minute, doubling, at most an hour); the failure is also
counted in the pass's DaemonRun, whose message (the dashboard's Daemons table) says how many
workunits wait to retry. BOINC's assimilator exits on a hook error instead; backing off lets
the other workunits through, so ``limit`` failing ones no longer stop assimilation.

A hook that outlasts its lease may find the workunit claimed by another assimilator
(``run_daemons`` beside the Celery workers): that worker runs the hook again and records the
outcome, so this one writes nothing for it and counts it as taken over. A hook that wrote to
the database (or registered on_commit callbacks) has its workunit marked at once, inside its
savepoint, so that a lost claim undoes its effects alone. A hook may thus run more than once
for a workunit (so too when a worker dies in a pass: what it had not committed is tried
again after the lease) and must be idempotent; the default one is.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import ForeignKey
from django.utils.module_loading import import_string

from apps.applications.models import App
from apps.core import clock
from apps.core.db import (
    ModelColumns,
    connection_lost,
    db_datetime,
)
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.domain.states import AssimilateState, ErrorMask
from apps.work.models import Result, Workunit
from apps.work.queries import (
    workunits_assimilate_ready_ids,
    workunits_assimilation_claims_release,
    workunits_assimilation_waiting,
    workunits_assimilation_write,
    workunits_claim_assimilation,
    workunits_with_app_and_canonical,
)
from apps.work.services.claims import (
    CLAIM_LEASE,
    LeaseClock,
    claims_abandon,
    claims_release,
    lease_until,
    one_by_one,
)
from apps.work.services.comparisons import OutputNames, output_files_of
from apps.work.services.scripts import command_words, expand, script_check

logger = logging.getLogger(__name__)

AssimilateHook = Callable[[Workunit, Result | None, list[Path]], str | Path | None]

RETRY_FIRST = timedelta(minutes=1)
RETRY_MAX = timedelta(hours=1)
ERROR_FRAMES = 5
ERROR_MAX_CHARS = 4000
READY = int(AssimilateState.READY)

# The pass's statements are written by hand (apps.work.queries): through the ORM, building them
# and the model instances cost more than running them.
_WORKUNIT = ModelColumns(Workunit, "w")
_APP = ModelColumns(App, "a")
_CANONICAL = ModelColumns(Result, "c")
_RELATIONS = {
    name: cast(ForeignKey, Workunit._meta.get_field(name)) for name in ("project", "app", "canonical_result")
}


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
    return import_string(dotted_path)


ASSIMILATE_KEYWORDS = ("files", "files2", "wu_id", "wu_name", "result_id", "runtime", "batch_id")


def script_assimilate(
    command: str,
    output_files: Callable[[Workunit], list[tuple[Path, str]]],
    workunit: Workunit,
    canonical_result: Result | None,
    output_paths: list[Path],
) -> str:
    """BOINC's script assimilator: run the app's command for the workunit.

    Keywords: ``files`` (the canonical outputs' paths), ``files2`` (``path logical_name``
    pairs), ``wu_id``, ``wu_name``, ``result_id``, ``runtime``, ``batch_id``; a command of the
    program alone gets ``wu_id files``. A workunit without a canonical result (it failed)
    runs ``CMD --error N wu_name wu_id batch_id``, N its error bits. A non-zero exit, a
    crash or a timeout raises ScriptFailed: the workunit is retried later."""
    words = command_words(command)
    if canonical_result is None:
        # The program and its own arguments; the keywords name a canonical result it has not.
        argv = [w for w in words if w not in ASSIMILATE_KEYWORDS]
        argv += ["--error", str(workunit.error_mask), workunit.name, str(workunit.id), str(workunit.batch)]
    else:
        files = output_files(workunit)
        values = {
            "files": [str(path) for path, _name in files],
            "files2": [part for path, name in files for part in (str(path), name)],
            "wu_id": [str(workunit.id)],
            "wu_name": [workunit.name],
            "result_id": [str(canonical_result.id)],
            "runtime": [f"{canonical_result.elapsed_time:f}"],
            "batch_id": [str(workunit.batch)],
        }
        argv = expand(words, values, ["wu_id", "files"])
    script_check(argv, cwd=workunit.project.data_dir)
    return ""


def retry_delay(attempts: int) -> timedelta:
    """How long a workunit waits after its ``attempts``-th hook call failed.

    One minute first (a few 15-second passes: a database restart or a full disk is over
    by then), doubling, at most an hour: a hook fixed after hours of failures picks up its
    backlog within the hour without the admin doing anything, and a workunit that always
    fails costs one hook call an hour."""
    return min(RETRY_FIRST * 2 ** min(max(attempts - 1, 0), 16), RETRY_MAX)


@dataclass(frozen=True, slots=True)
class _Claim:
    id: int
    attempts: int  # the count this worker's claim set


@dataclass(slots=True)
class _Tally:
    done: int = 0
    failed: list[str] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)

    def lose(self, wu_id: int) -> None:
        logger.warning(
            "assimilator: workunit %s was taken over by another assimilator (the hook outlasted its "
            "%s lease); this pass recorded nothing",
            wu_id,
            CLAIM_LEASE,
        )
        self.lost.append(wu_id)

    def add(self, other: _Tally) -> None:
        self.done += other.done
        self.failed += other.failed
        self.lost += other.lost


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
    claims_release("assimilator", lambda claims: _claims_release(claims, now))
    at = LeaseClock(now, monotonic)
    pending = _claim(project, at.leased, limit)
    tally = _Tally()
    try:
        batch = _Batch(project, pending)
        while pending:
            renew_at = at.renew_due()
            if renew_at is not None:
                pending = _lease_renew(pending, renew_at)
                continue
            handled, abandoned = _hand_over_safely(batch, pending, at, tally)
            pending = abandoned + pending[handled:] if abandoned else pending[handled:]
            if abandoned:
                break
    except Exception:
        if not connection_lost():
            raise
    errors = len(tally.failed) + len(tally.lost)
    if pending:
        # The database is away: the next pass releases these once it answers again.
        claims_abandon("assimilator", pending)
        note = f"{len(pending)} workunit(s) left for the next pass: the database connection was lost"
        return DaemonPass(items=tally.done, errors=errors + len(pending), message=note)
    message = _pass_message(_waiting_count(project, at()), tally.failed, tally.lost)
    return DaemonPass(items=tally.done, errors=errors, message=message)


def _hand_over_safely(
    batch: _Batch, pending: list[_Claim], at: LeaseClock, tally: _Tally
) -> tuple[int, list[_Claim]]:
    """Steps 3-4 for the pending workunits until the pass clock moves on: how many it took,
    and those it could not hand over because the database connection was lost. A failed
    transaction is tried again one workunit per transaction."""
    taken: list[_Claim] = []
    part = _Tally()
    try:
        handled = _hand_over(batch, pending, at(), at, part, taken)
    except Exception:
        connection_lost()
        logger.warning(
            "assimilator: a batch of %d failed; handing them over one by one", len(taken), exc_info=True
        )
    else:
        tally.add(part)
        return handled, []

    def one(claims: Sequence[_Claim]) -> _Tally:
        alone = _Tally()
        _hand_over(batch, list(claims), at(), at, alone, [])
        return alone

    retried = one_by_one("assimilator", taken, one, lambda c: f"workunit {c.id}")
    for alone in retried.results:
        tally.add(alone)
    # One that failed alone keeps its lease and is tried again when it runs out.
    tally.failed += [f"{c.id}: its hand-over failed" for c in retried.failed]
    return len(taken), retried.abandoned


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


def _claim(project: Project, now: datetime, limit: int) -> list[_Claim]:
    """Step 1: the claimed workunits, in the order they are to be handed over."""
    with transaction.atomic():
        ids = _due(project, now, limit)
        if not ids:
            return []
        attempts = workunits_claim_assimilation(ids, lease_until(now))
    return [_Claim(wu_id, attempts[wu_id]) for wu_id in ids if wu_id in attempts]


def _due(project: Project, now: datetime, limit: int) -> list[int]:
    """Ids of READY workunits to try now: due retries first, so a stream of new workunits
    cannot put them off for ever, but at most half the pass while new ones wait; then new
    ones in id order; then the rest of the due retries, if there is room.

    Each read is one range of wu_assimilate_ready, already in order. The new ones are ordered
    by retry time too (all empty): PostgreSQL does not take ``IS NULL`` as fixing the column,
    so ``ORDER BY id`` alone would sort every READY row of the project."""
    retries = workunits_assimilate_ready_ids(project.id, due_by=now, limit=limit)
    # Retries take at most half a pass while new work waits: a hook that fails slowly
    # (a timeout) must not fill every pass and keep the others from being assimilated.
    share = max(limit // 2, 1)
    ids = retries[:share]
    if len(ids) < limit:
        ids += workunits_assimilate_ready_ids(project.id, due_by=None, limit=limit - len(ids))
    return ids + retries[share : share + limit - len(ids)]


class _Batch:
    """Step 2: the claimed workunits, each with its project, app and canonical result cached
    as ``select_related`` would, and the canonical results' uploaded outputs."""

    def __init__(self, project: Project, claims: Sequence[_Claim]) -> None:
        self.project = project
        self.workunits: dict[int, Workunit] = {}
        self.outputs: dict[int, OutputNames] = {}
        self._hooks: dict[str, AssimilateHook] = {}
        if not claims:
            return
        for wu, app, canonical in workunits_with_app_and_canonical(
            [c.id for c in claims], _WORKUNIT, _APP, _CANONICAL
        ):
            for name, value in (("project", project), ("app", app), ("canonical_result", canonical)):
                _RELATIONS[name].set_cached_value(wu, value)
            self.workunits[wu.id] = wu
        self.outputs = output_files_of(
            [wu.canonical_result_id for wu in self.workunits.values() if wu.canonical_result_id]
        )

    def hook(self, app: App) -> AssimilateHook:
        if app.assimilate_script.strip():
            return partial(script_assimilate, app.assimilate_script, self.output_files)
        found = self._hooks.get(app.assimilator)
        if found is None:
            found = self._hooks[app.assimilator] = assimilate_hook_for(app.assimilator)
        return found

    def output_files(self, wu: Workunit) -> list[tuple[Path, str]]:
        """The canonical result's uploaded outputs with their logical names (as
        ``output_paths``)."""
        if wu.canonical_result_id is None:
            return []
        upload_dir = self.project.upload_dir
        files = []
        for name, optional, open_name in self.outputs.get(wu.canonical_result_id, ()):
            path = upload_dir / name
            if optional and not path.exists():
                continue
            files.append((path, open_name or name))
        return files

    def output_paths(self, wu: Workunit) -> list[Path]:
        """The canonical result's uploaded outputs; optional ones the client did not send are
        left out."""
        return [path for path, _name in self.output_files(wu)]


class _ClaimLost(Exception):
    """Another worker claimed the workunit while this one was in the hook."""


class _HookRun:
    """What one hook call did in the batch's transaction, to keep or drop with its outcome.

    As an execute wrapper around the hook it opens a savepoint (``transaction.atomic``) just
    before the hook's first statement, so a hook that never touches the database, as the
    default one, costs no statement. It also notes the on_commit callbacks the hook
    registers (a task to enqueue...), which a failure or a lost claim drops, as rolling
    back a transaction of its own would."""

    __slots__ = ("atomic", "callbacks")

    def __init__(self) -> None:
        self.atomic: Any = None
        self.callbacks = len(connection.run_on_commit)

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if self.atomic is None:
            self.atomic = transaction.atomic()
            self.atomic.__enter__()  # its own SAVEPOINT passes through here with atomic set
        return execute(sql, params, many, context)

    @property
    def wrote(self) -> bool:
        return self.atomic is not None or len(connection.run_on_commit) > self.callbacks

    def close(self, exc: BaseException | None) -> None:
        """Keep what the hook did, or with ``exc`` undo it."""
        atomic, self.atomic = self.atomic, None
        if atomic is not None:
            atomic.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)
        if exc is not None:
            del connection.run_on_commit[self.callbacks :]


def _hand_over(
    batch: _Batch,
    pending: list[_Claim],
    started: datetime,
    at: Callable[[], datetime],
    tally: _Tally,
    taken: list[_Claim],
) -> int:
    """Steps 3-4 for the pending workunits until the pass clock moves on from ``started``; how
    many it took (``taken``: those it took, as it goes, for a retry if the transaction fails)."""
    done: list[tuple[_Claim, str]] = []
    failures: list[tuple[_Claim, datetime, Exception]] = []
    handled = 0
    with transaction.atomic():
        for claim in pending:
            if handled and at() != started:
                break
            handled += 1
            taken.append(claim)
            wu = batch.workunits.get(claim.id)
            if wu is None or wu.assimilate_state != READY or wu.assimilate_attempts != claim.attempts:
                tally.lose(claim.id)  # gone, or claimed again, between the claim and the read
                continue
            run = _HookRun()
            try:
                with connection.execute_wrapper(run):
                    path = batch.hook(wu.app)(wu, wu.canonical_result, batch.output_paths(wu))
                path = str(path or "")[:500]
                wrote = run.wrote
                if wrote and not _mark_done([(claim, path)], started):
                    raise _ClaimLost
            except _ClaimLost as exc:
                run.close(exc)
                tally.lose(claim.id)
            except Exception as exc:
                run.close(exc)
                logger.exception("assimilator: workunit %s failed; retried later", claim.id)
                failures.append((claim, at(), exc))
            except BaseException as exc:
                run.close(exc)
                raise
            else:
                run.close(None)
                if wrote:
                    tally.done += 1
                else:
                    done.append((claim, path))
        _record(done, failures, started, tally)
    return handled


def _record(
    done: list[tuple[_Claim, str]],
    failures: list[tuple[_Claim, datetime, Exception]],
    leased_at: datetime,
    tally: _Tally,
) -> None:
    """Step 4's two writes, each only where this worker's claim holds."""
    marked = _mark_done(done, leased_at) if done else set()
    for claim, _path in done:
        if claim.id in marked:
            tally.done += 1
        else:
            tally.lose(claim.id)
    if not failures:
        return
    held = _mark_failed(failures)
    for claim, _when, exc in failures:
        if claim.id in held:
            tally.failed.append(f"{claim.id}: {type(exc).__name__}: {exc}")
        else:
            tally.lose(claim.id)


def _mark_done(done: Sequence[tuple[_Claim, str]], leased_at: datetime) -> set[int]:
    sets = (
        "assimilate_state = %s, assimilated_path = v.path, assimilate_retry_time = NULL, "
        "assimilate_error = %s, transition_time = %s"
    )
    rows = [(c.id, c.attempts, path) for c, path in done]
    return workunits_assimilation_write(
        ["path"], ["text"], rows, sets, [int(AssimilateState.DONE), "", db_datetime(leased_at)]
    )


def _mark_failed(failures: Sequence[tuple[_Claim, datetime, Exception]]) -> set[int]:
    """The error for the admin, and a back-off from each failure's time."""
    rows = [
        (c.id, c.attempts, db_datetime(when + retry_delay(c.attempts)), _error_text(exc))
        for c, when, exc in failures
    ]
    sets = "assimilate_retry_time = v.retry, assimilate_error = v.error"
    return workunits_assimilation_write(["retry", "error"], ["timestamptz", "text"], rows, sets, [])


def _lease_renew(pending: list[_Claim], now: datetime) -> list[_Claim]:
    """A new lease from ``now`` for the workunits not yet handed over, in one statement, and
    those of them this worker still holds (one whose lease ran out may have gone to another
    worker)."""
    rows = [(c.id, c.attempts) for c in pending]
    held = workunits_assimilation_write(
        [], [], rows, "assimilate_retry_time = %s", [db_datetime(lease_until(now))]
    )
    return [c for c in pending if c.id in held]


def _claims_release(claims: list[_Claim], now: datetime) -> None:
    """Claims an interrupted pass left: due again now, where the claim is still theirs (the
    attempt count it set, as every write of the module checks it)."""
    workunits_assimilation_claims_release([(c.id, c.attempts) for c in claims], now)


def _error_text(exc: Exception) -> str:
    """The error, then where it was raised (the last frames, which are the hook's)."""
    frames = "".join(traceback.format_exception(exc, limit=-ERROR_FRAMES))
    return f"{type(exc).__name__}: {exc}\n\n{frames}"[:ERROR_MAX_CHARS]


def _waiting_count(project: Project, now: datetime) -> int:
    """READY workunits backing off after a failed hook (or leased by a worker running it)."""
    return workunits_assimilation_waiting(project.id, now)
