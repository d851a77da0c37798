"""What the submission RPCs report: batches, their jobs, a job's instances."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Sum

from apps.core import clock
from apps.protocol.submit_rpc import BatchInfo, CompletedJob, InstanceInfo, JobInfo
from apps.submit.models import Batch
from apps.work.domain.states import ErrorMask, Outcome, ServerState
from apps.work.models import OutputFile, Result, Workunit

# BOINC's show_job_details order and names.
_ERROR_NAMES = (
    (ErrorMask.COULDNT_SEND_RESULT, "couldnt_send_result"),
    (ErrorMask.TOO_MANY_ERROR_RESULTS, "too_many_error_results"),
    (ErrorMask.TOO_MANY_SUCCESS_RESULTS, "too_many_success_results"),
    (ErrorMask.TOO_MANY_TOTAL_RESULTS, "too_many_total_results"),
    (ErrorMask.CANCELLED, "cancelled"),
    (ErrorMask.NO_CANONICAL_RESULT, "no_canonical_result"),
)


def _unix(value: datetime | None) -> float:
    return float(int(clock.to_unix(value)))


def batch_cpu_time(batch: Batch) -> float:
    return Result.objects.filter(workunit__batch=batch.id).aggregate(t=Sum("cpu_time"))["t"] or 0.0


def batch_info(batch: Batch, *, cpu_time: bool = False) -> BatchInfo:
    return BatchInfo(
        id=batch.id,
        create_time=_unix(batch.create_time),
        expire_time=_unix(batch.expire_time),
        est_completion_time=_unix(batch.est_completion_time),
        njobs=batch.njobs,
        fraction_done=batch.fraction_done,
        nerror_jobs=batch.nerror_jobs,
        state=batch.state,
        completion_time=_unix(batch.completion_time),
        credit_estimate=batch.credit_estimate,
        credit_canonical=batch.credit_canonical,
        name=batch.name,
        app_name=batch.app.name,
        total_cpu_time=batch_cpu_time(batch) if cpu_time else None,
    )


def batch_jobs(batch: Batch, *, details: bool) -> list[JobInfo]:
    """The batch's jobs in id order; with details, each one's errors and status from its
    tasks (one query for all of them)."""
    rows = list(
        Workunit.objects.filter(batch=batch.id)
        .order_by("id")
        .values_list("id", "name", "canonical_result_id", "error_mask")
    )
    if not details:
        return [JobInfo(id=i, name=n, canonical_instance_id=c or 0) for i, n, c, _m in rows]
    tasks: dict[int, list[tuple[int, int, int, int, float]]] = defaultdict(list)
    for wu_id, rid, state, outcome, exit_status, cpu in Result.objects.filter(
        workunit__batch=batch.id
    ).values_list("workunit_id", "id", "server_state", "outcome", "exit_status", "cpu_time"):
        tasks[wu_id].append((rid, state, outcome, exit_status, cpu))
    jobs = []
    for wu_id, name, canonical, mask in rows:
        mine = tasks.get(wu_id, [])
        errors = tuple(label for bit, label in _ERROR_NAMES if mask & bit)
        exits = tuple(e for _r, _s, o, e, _c in mine if mask and o == Outcome.CLIENT_ERROR)
        canonical_cpu = next((c for r, _s, _o, _e, c in mine if r == canonical), None)
        if mask:
            status = "error"
        elif canonical:
            status = "done"
        elif any(s == ServerState.IN_PROGRESS for _r, s, _o, _e, _c in mine):
            status = "in_progress"
        else:
            status = "queued"
        jobs.append(JobInfo(wu_id, name, canonical or 0, errors, exits, canonical_cpu, status))
    return jobs


def batch_job_statuses(batch: Batch, *, min_mod_time: float = 0) -> list[tuple[str, str]]:
    """query_batch2's (name, status) per job: DONE, ERROR, IN_PROGRESS (a task was sent), UNSENT.

    Workunits keep no modification time here; ``min_mod_time`` keeps the jobs whose
    transitioner last looked at them after it (every change of a task passes there)."""
    wus = Workunit.objects.filter(batch=batch.id).order_by("id")
    if min_mod_time:
        wus = wus.filter(transition_time__gt=clock.from_unix(min_mod_time))
    sent = set(
        Result.objects.filter(workunit__batch=batch.id, sent_time__isnull=False).values_list(
            "workunit_id", flat=True
        )
    )
    out = []
    for wu_id, name, canonical, mask in wus.values_list("id", "name", "canonical_result_id", "error_mask"):
        if canonical:
            status = "DONE"
        elif mask:
            status = "ERROR"
        elif wu_id in sent:
            status = "IN_PROGRESS"
        else:
            status = "UNSENT"
        out.append((name, status))
    return out


def _state_string(result: Result) -> str:
    if result.server_state != ServerState.OVER:
        return ServerState(result.server_state).name.replace("_", " ").capitalize()
    return Outcome(result.outcome).name.replace("_", " ").capitalize()


def job_instances(workunit: Workunit) -> list[InstanceInfo]:
    results = list(Result.objects.filter(workunit=workunit).order_by("id"))
    sizes: dict[int, list[int]] = defaultdict(list)
    for rid, nbytes in OutputFile.objects.filter(result__in=results, uploaded=True).values_list(
        "result_id", "nbytes"
    ):
        sizes[rid].append(nbytes)
    return [
        InstanceInfo(
            r.name,
            r.id,
            _state_string(r),
            tuple(sizes.get(r.id, ())) if r.server_state == ServerState.OVER else (),
        )
        for r in results
    ]


def completed_job(workunit: Workunit) -> CompletedJob:
    """The canonical task, else one that finished (successfully or not), with its figures."""
    result = None
    if workunit.canonical_result_id:
        result = Result.objects.filter(id=workunit.canonical_result_id).first()
    else:
        done = (Outcome.SUCCESS, Outcome.CLIENT_ERROR, Outcome.VALIDATE_ERROR)
        result = Result.objects.filter(workunit=workunit, outcome__in=done).order_by("-id").first()
    if result is None:
        return CompletedJob(error_mask=workunit.error_mask)
    return CompletedJob(
        error_mask=workunit.error_mask,
        canonical_resultid=result.id if workunit.canonical_result_id else 0,
        error_resultid=0 if workunit.canonical_result_id else result.id,
        exit_status=result.exit_status,
        elapsed_time=result.elapsed_time,
        cpu_time=result.cpu_time,
        stderr_out=result.stderr_out,
    )


def canonical_outputs(result_ids: list[int]) -> dict[int, tuple[str, list[str]]]:
    """Each canonical result's name and its output files' names in file-number order."""
    names = dict(Result.objects.filter(id__in=result_ids).values_list("id", "name"))
    files: dict[int, list[str]] = defaultdict(list)
    for rid, name in (
        OutputFile.objects.filter(result_id__in=result_ids)
        .order_by("result_id", "ordinal")
        .values_list("result_id", "name")
    ):
        files[rid].append(name)
    return {rid: (name, files.get(rid, [])) for rid, name in names.items()}
