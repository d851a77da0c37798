"""Writes for locality scheduling (docs/locality.md): files on hosts, no-work markers, on-demand work
generation and the working-set manager.

The scheduler calls the host-file and marker services inside its RPC transaction (each
opens a savepoint); the Celery tasks call the generation and working-set services. The
need-work signal, which enqueues a task, is in need_work.py: the tasks import this module.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.db import transaction
from django.db.models import F
from django.utils.module_loading import import_string

from apps.hosts.models import Host
from apps.locality.domain.choice import working_set_size
from apps.locality.domain.working_set import update_working_set
from apps.locality.generators import GeneratedWork
from apps.locality.models import HostFile, LocalityFile, NeedWork
from apps.locality.selectors import (
    active_host_count,
    file_holder_counts,
    locality_file_map,
    project_target_nresults,
    unsent_counts,
)
from apps.locality.triggers import Trigger, trigger_names, trigger_remove, trigger_root, trigger_touch
from apps.projects.models import Project
from apps.projects.services import DaemonPass, daemon_pass_run, projects_active_for
from apps.work.domain.locality_names import validate_locality_file_name
from apps.work.models import InputFile

logger = logging.getLogger(__name__)

# last_seen of a reported file is rewritten at most this often (not on every RPC).
LAST_SEEN_RESOLUTION = timedelta(hours=1)
# Handled need-work signals are kept this long for the admin, then deleted.
NEED_WORK_KEEP = timedelta(days=7)
DAEMON_NAME = "working_set"


def _valid_name(name: str) -> bool:
    try:
        validate_locality_file_name(name)
    except ValueError:
        return False
    return True


# --- files on hosts (called by the scheduler) -------------------------------------------------


def locality_files_ensure(*, project: Project, names: Iterable[str]) -> dict[str, LocalityFile]:
    """The rows of these file names, creating a row on first sight.

    A row is created only for a valid locality name that is an input file of the
    project, so a client cannot make the server store names it invented.
    """
    wanted = set(names)
    found = locality_file_map(project=project, names=wanted)
    missing = {n for n in wanted - found.keys() if _valid_name(n)}
    if not missing:
        return found
    inputs = list(InputFile.objects.filter(project=project, name__in=missing))
    if inputs:
        with transaction.atomic():
            LocalityFile.objects.bulk_create(
                [LocalityFile(project=project, name=f.name, nbytes=f.nbytes, input_file=f) for f in inputs],
                ignore_conflicts=True,  # a concurrent RPC may create the same row
            )
        found.update(locality_file_map(project=project, names=[f.name for f in inputs]))
    return found


def host_files_record_reported(
    *, host: Host, files: Iterable[LocalityFile], now: datetime, complete: bool = True
) -> None:
    """The host says it holds these files (sticky file_infos in its request).

    The client lists every sticky file it holds, so when the list is ``complete`` (not cut
    at the request's limit) a file it no longer lists is gone: a volunteer reset or
    re-attached the project, or the client dropped it. Such a row stops counting the host
    as a holder (as after a delete request) until the file is sent to it again.
    """
    by_id = {f.id: f for f in files}
    if complete:
        HostFile.objects.filter(host=host, delete_requested=False).exclude(file_id__in=by_id).update(
            delete_requested=True, last_seen=now
        )
    if not by_id:
        return
    with transaction.atomic():
        existing = {
            file_id: (seen, gone)
            for file_id, seen, gone in HostFile.objects.filter(host=host, file_id__in=by_id).values_list(
                "file_id", "last_seen", "delete_requested"
            )
        }
        HostFile.objects.bulk_create(
            [
                HostFile(host=host, file=f, first_seen=now, last_seen=now)
                for file_id, f in by_id.items()
                if file_id not in existing
            ],
            ignore_conflicts=True,
        )
        # A file listed again is held again (a delete request the client has not acted on).
        stale = [fid for fid, (seen, gone) in existing.items() if gone or seen < now - LAST_SEEN_RESOLUTION]
        if stale:
            HostFile.objects.filter(host=host, file_id__in=stale).update(
                last_seen=now, delete_requested=False
            )


def host_files_record_sent(
    *, host: Host, files: Iterable[LocalityFile], held: set[str], now: datetime
) -> int:
    """Files that went out with this RPC's jobs; a file the host did not report holding is a
    download. Returns the number of downloads."""
    delivered = {f.id: f for f in files if f.name not in held}
    if not delivered:
        return 0
    with transaction.atomic():
        existing = set(
            HostFile.objects.filter(host=host, file_id__in=delivered).values_list("file_id", flat=True)
        )
        HostFile.objects.filter(host=host, file_id__in=existing).update(
            sent_by_scheduler=True, delete_requested=False, last_seen=now, downloads=F("downloads") + 1
        )
        HostFile.objects.bulk_create(
            [
                HostFile(
                    host=host, file=f, first_seen=now, last_seen=now, sent_by_scheduler=True, downloads=1
                )
                for fid, f in delivered.items()
                if fid not in existing
            ]
        )
    return len(delivered)


def host_file_delete_requested(*, host: Host, file: LocalityFile, now: datetime) -> None:
    HostFile.objects.filter(host=host, file=file).update(delete_requested=True, last_seen=now)


# --- markers and signals ----------------------------------------------------------------------


def locality_file_mark_no_work(*, file: LocalityFile, now: datetime) -> None:
    """The scheduler found no sendable result: the working-set manager drops the file
    (and, in BOINC's layout, a files_no_work/X trigger tells an external manager)."""
    changed = LocalityFile.objects.filter(id=file.id, files_no_work=False).update(
        files_no_work=True, no_work_since=now
    )
    if changed:
        file.files_no_work, file.no_work_since = True, now
        trigger_touch(trigger_root(file.project), Trigger.FILES_NO_WORK, file.name)


def locality_files_set_no_work_available(*, file_ids: Iterable[int], value: bool) -> int:
    """Admin: mark (or clear) "the generator can make no more work for these files"."""
    files = list(LocalityFile.objects.filter(id__in=list(file_ids)).select_related("project"))
    LocalityFile.objects.filter(id__in=[f.id for f in files]).update(no_work_available=value)
    for f in files:
        root = trigger_root(f.project)
        if value:
            trigger_touch(root, Trigger.NO_WORK_AVAILABLE, f.name)
        else:
            trigger_remove(root, Trigger.NO_WORK_AVAILABLE, f.name)
    return len(files)


# --- on-demand work generation (the Celery task) ------------------------------------------------


def locality_work_generate(*, file_id: int, now: datetime) -> GeneratedWork | None:
    """Answer the pending need-work signal of one file with the project's generator.

    1. Lock the file row, so two workers never generate for the same file at once.
    2. Nothing pending (another worker answered), or no generator configured: stop.
    3. Call the generator; it creates workunits (and their results) in this transaction.
    4. Close the pending signal with the number created; an exhausted generator sets
       ``no_work_available`` so the scheduler skips the wait from now on.
    5. After commit, mirror it in BOINC's trigger files (need_work/X removed once work
       exists, no_work_available/X written).
    """
    with transaction.atomic():
        file = (
            LocalityFile.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(id=file_id)
            .first()
        )
        if file is None:
            return None
        pending = NeedWork.objects.filter(file=file, handled_time__isnull=True)
        project = file.project
        if not pending.exists() or not project.locality_work_generator:
            return None
        generator = import_string(project.locality_work_generator)
        outcome: GeneratedWork = generator(project=project, file=file, now=now)
        pending.update(handled_time=now, workunits_created=outcome.created)
        if outcome.exhausted:
            LocalityFile.objects.filter(id=file.id).update(no_work_available=True)
    root = trigger_root(project)
    if outcome.created:
        trigger_remove(root, Trigger.NEED_WORK, file.name)
    if outcome.exhausted:
        trigger_touch(root, Trigger.NO_WORK_AVAILABLE, file.name)
    logger.info(
        "locality %s: generated %d workunit(s) for %s%s",
        project.slug,
        outcome.created,
        file.name,
        " (no more can be made)" if outcome.exhausted else "",
    )
    return outcome


# --- the working-set manager ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkingSetPass:
    target_size: int
    working_set: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    cleared_no_work: tuple[str, ...]
    files_created: int
    signals_closed: int
    signals_purged: int

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.removed) + len(self.cleared_no_work) + self.files_created


def _create_missing_files(project: Project, names: set[str]) -> int:
    known = set(LocalityFile.objects.filter(project=project, name__in=names).values_list("name", flat=True))
    missing = names - known
    if not missing:
        return 0
    inputs = {f.name: f for f in InputFile.objects.filter(project=project, name__in=missing)}
    LocalityFile.objects.bulk_create(
        [
            LocalityFile(
                project=project,
                name=name,
                nbytes=inputs[name].nbytes if name in inputs else 0,
                input_file=inputs.get(name),
            )
            for name in sorted(missing)
        ],
        ignore_conflicts=True,
    )
    return len(missing)


def working_set_update(*, project: Project, now: datetime) -> WorkingSetPass:
    """One pass of the working-set manager for a project.

    1. Give every file with unsent results a LocalityFile row (create_work makes the
       workunits; the rows appear here or when a host first reports the file).
    2. Copy BOINC's no_work_available/ triggers into the rows' flags.
    3. Compute the new set of about N/M files (N active hosts, M target results):
       no-work files dropped, files whose work reappeared added back, the excess over
       N/M dropped, least-held first (domain function).
    4. Write the flags; clear stale no-work markers and their files_no_work/ triggers.
    5. Close pending need-work signals of files that have work again (an external
       generator answered through need_work/), and delete old handled signals.
    Idempotent: running it twice in a row changes nothing the second time.
    """
    root = trigger_root(project)
    counts = unsent_counts(project=project)
    with transaction.atomic():
        created = _create_missing_files(project, set(counts))
        flagged = trigger_names(root, Trigger.NO_WORK_AVAILABLE)
        if flagged:
            LocalityFile.objects.filter(project=project, name__in=flagged, no_work_available=False).update(
                no_work_available=True
            )
        rows = list(
            LocalityFile.objects.filter(project=project).values_list(
                "name", "in_working_set", "files_no_work"
            )
        )
        target = working_set_size(
            active_host_count(project=project, now=now), project_target_nresults(project=project)
        )
        current = [name for name, in_set, _ in rows if in_set]
        update = update_working_set(
            current=current,
            unsent_counts={name: counts.get(name, 0) for name, _, _ in rows},
            no_work={name for name, _, no_work in rows if no_work},
            target_size=target,
            holders=file_holder_counts(project=project, now=now, file_names=current),
        )
        files = LocalityFile.objects.filter(project=project)
        files.filter(name__in=update.added).update(in_working_set=True)
        files.filter(name__in=update.removed).update(in_working_set=False)
        files.filter(name__in=update.cleared_no_work).update(files_no_work=False, no_work_since=None)
        closed = NeedWork.objects.filter(
            file__project=project,
            handled_time__isnull=True,
            file__name__in=[n for n, c in counts.items() if c],
        ).update(handled_time=now)
        purged, _ = NeedWork.objects.filter(
            file__project=project, handled_time__lt=now - NEED_WORK_KEEP
        ).delete()
    for name in update.cleared_no_work:
        trigger_remove(root, Trigger.FILES_NO_WORK, name)
    return WorkingSetPass(
        target_size=target,
        working_set=update.working_set,
        added=update.added,
        removed=update.removed,
        cleared_no_work=update.cleared_no_work,
        files_created=created,
        signals_closed=closed,
        signals_purged=purged,
    )


def working_sets_update(*, now: datetime) -> list[WorkingSetPass]:
    """The periodic task's body: every locality project that has not paused the daemon,
    each pass recorded as a DaemonRun for the project dashboard. A project whose pass
    raises is recorded with the error and the other projects still get theirs."""
    passes: list[WorkingSetPass] = []

    def run(project: Project) -> DaemonPass:
        result = working_set_update(project=project, now=now)
        passes.append(result)
        return DaemonPass(
            items=result.changes,
            message=f"working set {len(result.working_set)}/{result.target_size}; "
            f"+{len(result.added)} -{len(result.removed)}",
        )

    for project in projects_active_for(daemon=DAEMON_NAME):
        if project.locality_scheduling:
            daemon_pass_run(project=project, daemon=DAEMON_NAME, run=partial(run, project))
    return passes
