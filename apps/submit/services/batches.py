"""Batches: their figures from their jobs, abort, retire, expiry, and the deletion of the
files of retired batches (the daemon ``batches``, after work's file deleter in each round)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from django.db import transaction
from django.db.models import Count, Q, Sum

from apps.core import clock
from apps.core.db import quoted_table
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.submit.domain.progress import JobCounts, next_state, progress
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch, JobFile
from apps.work.domain.states import AssimilateState, FileDeleteState, ServerState
from apps.work.models import InputFile, Result, Workunit
from apps.work.services.cancel import workunit_cancel


def job_counts(batch_id: int) -> JobCounts:
    """The counts of a batch's jobs in two aggregate queries, whatever its size."""
    decided = Q(canonical_result__isnull=False) | Q(error_mask__gt=0)
    success = Q(canonical_result__isnull=False)
    row = Workunit.objects.filter(batch=batch_id).aggregate(
        njobs=Count("id"),
        success=Count("id", filter=success),
        errors=Count("id", filter=Q(canonical_result__isnull=True, error_mask__gt=0)),
        unassimilated=Count("id", filter=decided & ~Q(assimilate_state=AssimilateState.DONE)),
        fpops_total=Sum("rsc_fpops_est"),
        fpops_done=Sum("rsc_fpops_est", filter=success),
        credit=Sum("canonical_credit", filter=success),
    )
    in_progress = (
        Result.objects.filter(
            workunit__batch=batch_id,
            server_state=ServerState.IN_PROGRESS,
            workunit__canonical_result__isnull=True,
            workunit__error_mask=0,
        )
        .values("workunit_id")
        .distinct()
        .count()
    )
    return JobCounts(
        njobs=row["njobs"],
        success=row["success"],
        errors=row["errors"],
        in_progress=in_progress,
        unassimilated=row["unassimilated"],
        fpops_total=row["fpops_total"] or 0.0,
        fpops_done=row["fpops_done"] or 0.0,
        credit_canonical=row["credit"] or 0.0,
    )


def batch_refresh(*, batch: Batch, now: datetime | None = None) -> Batch:
    """Bring a batch's figures (and state: complete once every job is decided and
    assimilated) up to date with its jobs; INIT batches have no jobs to count."""
    if batch.state == BatchState.INIT:
        return batch
    now = now or clock.now()
    counts = job_counts(batch.id)
    prog = progress(counts, elapsed=(now - batch.create_time).total_seconds())
    batch.njobs = counts.njobs
    batch.njobs_success = counts.success
    batch.nerror_jobs = counts.errors
    batch.njobs_in_progress = counts.in_progress
    batch.fraction_done = prog.fraction_done
    batch.credit_canonical = counts.credit_canonical
    if prog.seconds_left is not None and batch.state == BatchState.IN_PROGRESS:
        batch.est_completion_time = now + timedelta(seconds=prog.seconds_left)
    state = next_state(batch.batch_state, prog)
    fields = [
        "njobs",
        "njobs_success",
        "nerror_jobs",
        "njobs_in_progress",
        "fraction_done",
        "credit_canonical",
        "est_completion_time",
    ]
    with transaction.atomic():
        # Only an in-progress batch completes: an abort or retire meanwhile wins.
        if state != batch.state and Batch.objects.filter(id=batch.id, state=batch.state).update(
            state=state, completion_time=now
        ):
            batch.state, batch.completion_time = state, now
        Batch.objects.filter(id=batch.id).update(**{f: getattr(batch, f) for f in fields})
    return batch


def batch_current(batch: Batch) -> Batch:
    """The batch with its figures brought up to date if it is running (others are final)."""
    return batch_refresh(batch=batch) if batch.state == BatchState.IN_PROGRESS else batch


def batch_abort(*, batch: Batch, now: datetime | None = None) -> None:
    """Cancel every job of the batch (hosts abort the tasks they hold); state ABORTED."""
    now = now or clock.now()
    with transaction.atomic():
        ids = list(Workunit.objects.filter(batch=batch.id).values_list("id", flat=True))
        workunit_cancel(workunit_ids=ids, now=now)
        Batch.objects.filter(id=batch.id).update(state=BatchState.ABORTED, completion_time=now)
    batch.state, batch.completion_time = BatchState.ABORTED, now


def jobs_abort(*, workunit_ids: list[int], now: datetime | None = None) -> int:
    return workunit_cancel(workunit_ids=workunit_ids, now=now)


def batch_retire(*, batch: Batch, now: datetime | None = None) -> None:
    """The submitter is done with the batch: its jobs not yet sent are cancelled, and the
    file deleter removes its outputs (tasks on hosts finish or time out as usual)."""
    now = now or clock.now()
    batch_refresh(batch=batch, now=now)
    with transaction.atomic():
        unsent = list(
            Workunit.objects.filter(batch=batch.id, canonical_result__isnull=True, error_mask=0)
            .exclude(results__server_state__in=[ServerState.IN_PROGRESS, ServerState.OVER])
            .values_list("id", flat=True)
        )
        workunit_cancel(workunit_ids=unsent, now=now)
        Batch.objects.filter(id=batch.id).update(state=BatchState.RETIRED)
    batch.state = BatchState.RETIRED


def batch_expire(*, batch: Batch, now: datetime | None = None) -> None:
    """BOINC's expire_batch: abort, then retire."""
    batch_abort(batch=batch, now=now)
    batch_retire(batch=batch, now=now)


def _within(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def batch_files_delete(*, batch: Batch) -> bool:
    """Remove the assimilated outputs of a retired batch's jobs; True once every job is
    assimilated and nothing of the batch is left in the results area."""
    results_dir = batch.project.results_dir
    rows = Workunit.objects.filter(batch=batch.id).values_list("name", "assimilated_path", "assimilate_state")
    finished = True
    for name, assimilated, state in rows:
        for path in {results_dir / name, *([Path(assimilated)] if assimilated else [])}:
            if path.exists() and _within(path, results_dir) and path.resolve() != results_dir.resolve():
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
        if state != AssimilateState.DONE:
            finished = False
    if finished:
        Batch.objects.filter(id=batch.id).update(files_deleted=True)
    return finished


def job_files_release(*, project: Project, now: datetime) -> int:
    """Uploaded job files past their delete time and held by no batch still open go to the
    file deleter, which removes each once no unfinished job uses it. Rows whose input file
    db_purge has removed are deleted."""
    JobFile.objects.filter(input_file__isnull=True).delete()
    live = JobFile.objects.filter(
        batches__state__in=[BatchState.INIT, BatchState.IN_PROGRESS, BatchState.COMPLETE]
    )
    ids = list(
        JobFile.objects.filter(input_file__project=project, delete_time__lt=now)
        .exclude(id__in=live.values("id"))
        .filter(input_file__file_delete_state=FileDeleteState.INIT, input_file__no_delete=False)
        .values_list("input_file_id", flat=True)
    )
    return InputFile.objects.filter(id__in=ids, file_delete_state=FileDeleteState.INIT).update(
        file_delete_state=FileDeleteState.READY
    )


def batches_daemon(project: Project, now: datetime, options: object) -> DaemonPass:
    """One pass: expire batches past their expire time, refresh the figures of batches in
    progress, delete the outputs of retired ones, release job files past their time."""
    items = 0
    for batch in Batch.objects.filter(project=project, expire_time__lt=now).exclude(state=BatchState.RETIRED):
        batch_expire(batch=batch, now=now)
        items += 1
    for batch in Batch.objects.filter(project=project, state=BatchState.IN_PROGRESS):
        batch_refresh(batch=batch, now=now)
        items += 1
    for batch in Batch.objects.filter(
        project=project, state=BatchState.RETIRED, files_deleted=False
    ).select_related("project"):
        batch_files_delete(batch=batch)
        items += 1
    items += job_files_release(project=project, now=now)
    return DaemonPass(items=items)


def batch_jobs_purge_hold() -> tuple[str, tuple[object, ...]]:
    """db_purge's condition keeping the jobs of a batch until it is retired and its outputs
    are deleted (apps.work.services.extensions.purge_hold_register). Until then the
    submitter still follows the jobs and fetches their outputs, and the deletion of those
    outputs finds them through the jobs' rows. A batch number with no batch of the project
    behind it (BOINC projects number batches without batch rows too) holds nothing.

    SQL: the hold is a condition inside db_purge's own statement, by that interface."""
    return (
        f"w.batch <> 0 AND EXISTS (SELECT 1 FROM {quoted_table(Batch)} b WHERE b.id = w.batch "
        "AND b.project_id = w.project_id AND (b.state <> %s OR NOT b.files_deleted))",
        (int(BatchState.RETIRED),),
    )


def submitter_jobs_in_progress(account_id: int) -> int:
    """Jobs of the submitter's batches in progress that are neither done nor errored."""
    ids = Batch.objects.filter(owner_id=account_id, state=BatchState.IN_PROGRESS).values("id")
    return Workunit.objects.filter(batch__in=ids, canonical_result__isnull=True, error_mask=0).count()
