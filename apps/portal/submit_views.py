"""Pages for scientists (BOINC's submit.php): a submitter's batches with their progress and
estimated completion, a batch's jobs, abort and retire (confirmed, by POST), and the
outputs to download. A submitter who manages every app sees every batch of the project."""

from __future__ import annotations

import tempfile
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse

from apps.portal.volunteer_session import id_param, volunteer_required
from apps.projects.models import Project
from apps.submit import selectors
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch, UserSubmit
from apps.submit.services import batches as batch_services
from apps.submit.services import files as file_services
from apps.submit.services.permissions import SubmitError, batch_managed
from apps.volunteers.models import Account

BATCHES_PER_PAGE = 20
JOBS_PER_PAGE = 50
# What each button does, in the words of its confirmation page.
ACTIONS = {
    "abort": "Abort: every job of the batch is cancelled; computers abort the tasks they hold.",
    "retire": "Retire: jobs not yet sent are cancelled, and the batch's output files are deleted.",
}


def _page(
    request: HttpRequest, project: Project, template: str, status: int = 200, **context: Any
) -> HttpResponse:
    return render(request, f"portal/submit/{template}", {"project": project, **context}, status=status)


def _batch(project: Project, account: Account, raw_id: str | None) -> Batch:
    try:
        return batch_services.batch_current(
            batch_managed(project=project, account=account, batch_id=id_param(raw_id))
        )
    except SubmitError as exc:
        raise Http404(exc.message) from None


@volunteer_required
def batches(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    submitter = UserSubmit.objects.filter(account=account).first()
    if submitter is None:
        return _page(request, project, "not_submitter.html", status=403, account=account)
    shown = Batch.objects.filter(project=project).select_related("app", "owner")
    if not submitter.manage_all:
        shown = shown.filter(owner=account)
    page = Paginator(shown, BATCHES_PER_PAGE).get_page(request.GET.get("page"))
    rows = [batch_services.batch_current(b) for b in page]
    return _page(
        request,
        project,
        "batches.html",
        account=account,
        page=page,
        batches=rows,
        all_batches=submitter.manage_all,
    )


@volunteer_required
def batch(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    shown = _batch(project, account, request.GET.get("batch_id"))
    page = Paginator(selectors.batch_jobs(shown, details=True), JOBS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    outputs = selectors.canonical_outputs([j.canonical_instance_id for j in page if j.canonical_instance_id])
    jobs = [(job, outputs.get(job.canonical_instance_id)) for job in page]
    return _page(
        request,
        project,
        "batch.html",
        account=account,
        batch=shown,
        page=page,
        jobs=jobs,
        can_abort=shown.state in (BatchState.INIT, BatchState.IN_PROGRESS),
        can_retire=shown.state != BatchState.RETIRED,
    )


@volunteer_required
def batch_action(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    """GET: the confirmation page; POST: abort or retire the batch."""
    shown = _batch(project, account, request.POST.get("batch_id") or request.GET.get("batch_id"))
    action = request.POST.get("action") or request.GET.get("action") or ""
    if action not in ACTIONS:
        raise Http404("unknown action")
    if request.method != "POST":
        return _page(
            request,
            project,
            "confirm.html",
            account=account,
            batch=shown,
            action=action,
            what=ACTIONS[action],
        )
    if action == "abort":
        batch_services.batch_abort(batch=shown)
        messages.success(request, f"Batch {shown.name} is aborted.")
    else:
        batch_services.batch_retire(batch=shown)
        messages.success(request, f"Batch {shown.name} is retired; its output files will be deleted.")
    return redirect(f"{reverse('volunteers:submit_batch', args=[project.slug])}?batch_id={shown.id}")


@volunteer_required
def batch_output(request: HttpRequest, project: Project, account: Account) -> HttpResponseBase:
    """The batch's outputs as a zip, or with ``result`` and ``file_num`` one result's file."""
    try:
        if "result" in request.GET:
            path = file_services.result_file(
                project=project,
                result_name=request.GET["result"],
                file_num=id_param(request.GET.get("file_num")),
                viewer=account,
            )
            return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
        batch_id = id_param(request.GET.get("batch_id"))
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes it
        file_services.batch_zip(project=project, batch_id=batch_id, out=spool, viewer=account)
    except SubmitError as exc:
        raise Http404(exc.message) from None
    spool.seek(0)
    return FileResponse(spool, as_attachment=True, filename=f"batch_{batch_id}.zip")
