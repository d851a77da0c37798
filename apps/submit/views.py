"""BOINC's remote submission pages: submit_rpc_handler.php and job_file.php (XML RPCs, the
request in the POST field ``request``) and get_output.php (files, authorised by auth_str).

Every refusal of the RPCs is BOINC's error reply with HTTP 200, and writes nothing."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from urllib.parse import parse_qs

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.request import RawPostDataException
from django.http.response import HttpResponseBase
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from apps.core import clock
from apps.projects.models import Project
from apps.protocol import ProtocolError
from apps.protocol import submit_rpc as rpc
from apps.scheduler.ratelimits import login_failed, login_wait, wait_text
from apps.submit import selectors
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch
from apps.submit.services import batches as batch_services
from apps.submit.services import files as file_services
from apps.submit.services import submission
from apps.submit.services.permissions import (
    BAD_AUTHENTICATOR,
    SubmitError,
    app_named,
    authenticator_identity,
    batch_owned,
    submitter_check,
)
from apps.volunteers.models import Account
from apps.work.models import Workunit

XML = "text/xml; charset=utf-8"
Handler = Callable[[Project, rpc.SubmitRequest], bytes]


def _request_text(request: HttpRequest) -> bytes:
    """The ``request`` field of the POST, read from the body itself for a plain form: a
    batch of thousands of jobs is larger than Django's limit for form fields."""
    if request.content_type == "multipart/form-data":
        try:
            return request.POST.get("request", "").encode("utf-8")
        except (RequestDataTooBig, TooManyFieldsSent) as exc:
            raise SubmitError(f"request refused: {exc}") from None
    limit = settings.COBBLESTONE_SUBMIT_MAX_REQUEST_BYTES
    try:
        raw = request.read(limit + 1)
    except RawPostDataException:
        raw = request.body
    if len(raw) > limit:
        raise SubmitError(f"request over the {limit}-byte limit")
    try:
        fields = parse_qs(raw, max_num_fields=20) if request.method == "POST" else {}
    except ValueError as exc:  # more fields than a client sends
        raise SubmitError(f"request refused: {exc}") from None
    values = fields.get(b"request") or [b""]
    return values[0]


def _account(project: Project, req: rpc.SubmitRequest, app_name: str | None = None) -> Account:
    app = app_named(project=project, name=app_name) if app_name is not None else None
    account, _ = submitter_check(project=project, authenticator=req.authenticator, app=app)
    return account


def _batch(project: Project, req: rpc.SubmitRequest) -> Batch:
    account = _account(project, req)
    return batch_owned(
        project=project, account=account, batch_id=req.integer("batch_id"), batch_name=req.text("batch_name")
    )


def _ping(project: Project, req: rpc.SubmitRequest) -> bytes:
    if project.web_stopped:
        raise SubmitError("Project is temporarily offline", -183)
    return rpc.render_success("ping")


def _create_batch(project: Project, req: rpc.SubmitRequest) -> bytes:
    app = app_named(project=project, name=req.text("app_name"))
    account, _ = submitter_check(project=project, authenticator=req.authenticator, app=app)
    batch = submission.batch_create(
        project=project,
        account=account,
        app=app,
        name=req.text("batch_name"),
        expire_time=req.number("expire_time"),
    )
    return rpc.render_leaves("create_batch", [("batch_id", str(batch.id))])


def _batch_desc(req: rpc.SubmitRequest) -> rpc.BatchDesc:
    if req.batch is None:
        raise SubmitError("no batch in request")
    return req.batch


def _estimate_batch(project: Project, req: rpc.SubmitRequest) -> bytes:
    desc = _batch_desc(req)
    app = app_named(project=project, name=desc.app_name)
    submitter_check(project=project, authenticator=req.authenticator, app=app)
    seconds = submission.batch_estimate(project=project, app=app, desc=desc)
    return rpc.render_leaves("estimate_batch", [("seconds", repr(float(seconds)))])


def _submit_batch(project: Project, req: rpc.SubmitRequest) -> bytes:
    desc = _batch_desc(req)
    app = app_named(project=project, name=desc.app_name)
    account, submitter = submitter_check(project=project, authenticator=req.authenticator, app=app)
    batch = submission.batch_submit(project=project, account=account, submitter=submitter, app=app, desc=desc)
    return rpc.render_leaves("submit_batch", [("batch_id", str(batch.id))])


def _query_batches(project: Project, req: rpc.SubmitRequest) -> bytes:
    account = _account(project, req)
    cpu = bool(req.integer("get_cpu_time"))
    batches = Batch.objects.filter(project=project, owner=account).exclude(state=BatchState.RETIRED)
    infos = [
        selectors.batch_info(batch_services.batch_current(b), cpu_time=cpu)
        for b in batches.select_related("app")
    ]
    return rpc.render_query_batches(infos)


def _query_batch(project: Project, req: rpc.SubmitRequest) -> bytes:
    batch = batch_services.batch_current(_batch(project, req))
    info = selectors.batch_info(batch, cpu_time=bool(req.integer("get_cpu_time")))
    jobs = selectors.batch_jobs(batch, details=bool(req.integer("get_job_details")))
    return rpc.render_query_batch(info, jobs)


def _query_batch2(project: Project, req: rpc.SubmitRequest) -> bytes:
    account = _account(project, req)
    batches = [batch_owned(project=project, account=account, batch_name=name) for name in req.batch_names]
    min_mod_time = req.number("min_mod_time")
    now = clock.to_unix(clock.now())
    return rpc.render_query_batch2(
        now, [selectors.batch_job_statuses(b, min_mod_time=min_mod_time) for b in batches]
    )


def _owned_job(project: Project, account: Account, workunit: Workunit | None) -> Workunit:
    if workunit is None:
        raise SubmitError("no such job")
    batch = Batch.objects.filter(project=project, id=workunit.batch).first() if workunit.batch else None
    if batch is None or batch.owner_id != account.pk:
        raise SubmitError("not owner")
    return workunit


def _query_job(project: Project, req: rpc.SubmitRequest) -> bytes:
    account = _account(project, req)
    wu = _owned_job(
        project, account, Workunit.objects.filter(project=project, id=req.integer("job_id")).first()
    )
    return rpc.render_query_job(selectors.job_instances(wu))


def _query_completed_job(project: Project, req: rpc.SubmitRequest) -> bytes:
    account = _account(project, req)
    wu = _owned_job(
        project, account, Workunit.objects.filter(project=project, name=req.text("job_name")).first()
    )
    return rpc.render_query_completed_job(selectors.completed_job(wu))


def _abort_batch(project: Project, req: rpc.SubmitRequest) -> bytes:
    batch_services.batch_abort(batch=_batch(project, req))
    return rpc.render_success("abort_batch")


def _abort_jobs(project: Project, req: rpc.SubmitRequest) -> bytes:
    """Every named job must be the submitter's, or none is aborted."""
    account = _account(project, req)
    wus = {wu.name: wu for wu in Workunit.objects.filter(project=project, name__in=set(req.job_names))}
    ids = []
    for name in req.job_names:
        wu = wus.get(name)
        if wu is None:
            raise SubmitError(f"no job {name}")
        if not wu.batch:
            raise SubmitError(f"job {name} is not part of a batch")
        ids.append(_owned_job(project, account, wu).id)
    batch_services.jobs_abort(workunit_ids=ids)
    return rpc.render_success("abort_jobs")


def _retire_batch(project: Project, req: rpc.SubmitRequest) -> bytes:
    batch_services.batch_retire(batch=_batch(project, req))
    return rpc.render_success("retire_batch")


def _set_expire_time(project: Project, req: rpc.SubmitRequest) -> bytes:
    submission.batch_expire_time_set(batch=_batch(project, req), expire_time=req.number("expire_time"))
    return rpc.render_success("set_expire_time")


def _get_templates(project: Project, req: rpc.SubmitRequest) -> bytes:
    if req.text("app_name"):
        app = app_named(project=project, name=req.text("app_name"))
    else:
        wu = Workunit.objects.filter(project=project, name=req.text("job_name")).select_related("app").first()
        if wu is None:
            raise SubmitError(f"job not found: {req.text('job_name')}")
        app = wu.app
    submitter_check(project=project, authenticator=req.authenticator, app=app)
    texts = [submission.template_text(project, f"{app.name}_{kind}") for kind in ("in", "out")]
    if texts[0] is None or texts[1] is None:
        raise SubmitError("template file missing")
    try:
        return rpc.render_templates(texts[0], texts[1])
    except ProtocolError as exc:
        raise SubmitError(f"template file is not XML: {exc.message}") from None


def _query_files(project: Project, req: rpc.SubmitRequest) -> bytes:
    account = _account(project, req)
    absent = file_services.files_query(
        project=project,
        account=account,
        names=req.phys_names,
        batch_id=req.integer("batch_id"),
        delete_time=req.number("delete_time"),
    )
    return rpc.render_absent_files(absent)


HANDLERS: dict[str, Handler] = {
    "abort_batch": _abort_batch,
    "abort_jobs": _abort_jobs,
    "create_batch": _create_batch,
    "estimate_batch": _estimate_batch,
    "get_templates": _get_templates,
    "ping": _ping,
    "query_batch": _query_batch,
    "query_batch2": _query_batch2,
    "query_batches": _query_batches,
    "query_job": _query_job,
    "query_completed_job": _query_completed_job,
    "retire_batch": _retire_batch,
    "set_expire_time": _set_expire_time,
    "submit_batch": _submit_batch,
}


def _xml(body: bytes) -> HttpResponse:
    return HttpResponse(body, content_type=XML)


def _guarded(request: HttpRequest, req: rpc.SubmitRequest, handle: Callable[[], bytes]) -> bytes:
    """A wrong authenticator counts as a failed log-in, under a hash of the key tried, so the
    limits per client address refuse a guesser as they do on the account RPCs."""
    identity = authenticator_identity(req.authenticator)
    wait = login_wait(request, identity)
    if wait is not None:
        raise SubmitError(f"Too many attempts; try again in {wait_text(wait)}.")
    try:
        return handle()
    except SubmitError as exc:
        if exc.message == BAD_AUTHENTICATOR:
            login_failed(request, identity)
        raise


def _answer(
    request: HttpRequest, slug: str, calls: tuple[str, ...], handle: Callable[..., bytes]
) -> HttpResponse:
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return HttpResponse(rpc.render_error_reply(None, -136, "No such project"), XML, status=404)
    call = None
    try:
        body = _request_text(request)
        call = rpc.request_call(body)
        try:
            req = rpc.parse_submit_request(body, calls=calls, max_jobs=settings.COBBLESTONE_SUBMIT_MAX_JOBS)
        except ProtocolError as exc:
            raise SubmitError(f"can't parse request message: {exc.message}") from None
        return _xml(_guarded(request, req, lambda: handle(project, req)))
    except SubmitError as exc:
        return _xml(rpc.render_error_reply(call, exc.error_num, exc.message))
    except ProtocolError as exc:
        return _xml(rpc.render_error_reply(call, -1, exc.message))


@csrf_exempt  # machine clients hold no CSRF token
@never_cache
def submit_rpc_handler(request: HttpRequest, slug: str) -> HttpResponse:
    return _answer(request, slug, rpc.SUBMIT_CALLS, lambda project, req: HANDLERS[req.call](project, req))


@csrf_exempt
@never_cache
def job_file(request: HttpRequest, slug: str) -> HttpResponse:
    def handle(project: Project, req: rpc.SubmitRequest) -> bytes:
        if req.call == "query_files":
            return _query_files(project, req)
        account = _account(project, req)
        uploads = [f for key in sorted(request.FILES, key=_upload_order) for f in request.FILES.getlist(key)]
        file_services.files_upload(
            project=project,
            account=account,
            names=req.phys_names,
            files=uploads,
            batch_id=req.integer("batch_id"),
            delete_time=req.number("delete_time"),
        )
        return rpc.render_leaves("upload_files", [("success", "")])

    return _answer(request, slug, rpc.JOB_FILE_CALLS, handle)


def _upload_order(key: str) -> tuple[int, str]:
    """file_0, file_1, ... in number order (file_10 after file_9)."""
    suffix = key.rpartition("_")[2]
    return (int(suffix) if suffix.isdigit() else 1 << 30, key)


def _text_error(message: str, status: int) -> HttpResponse:
    return HttpResponse(f"ERROR: {message}\n", content_type="text/plain; charset=utf-8", status=status)


@never_cache
def get_output(request: HttpRequest, slug: str) -> HttpResponseBase:
    """``cmd=result_file`` (result_name, file_num) or ``cmd=batch_files`` (batch_id, as a zip),
    each with ``auth_str``, the MD5 of the owner's authenticator and the name or id."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        return _text_error("no such project", 404)
    cmd, auth_str = request.GET.get("cmd", ""), request.GET.get("auth_str", "")
    try:
        if cmd == "result_file":
            num = request.GET.get("file_num", "0")
            path = file_services.result_file(
                project=project,
                result_name=request.GET.get("result_name", ""),
                file_num=int(num) if num.isdigit() and len(num) < 6 else -1,
                auth_str=auth_str,
            )
            return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
        if cmd == "batch_files":
            raw_id = request.GET.get("batch_id", "")
            if not raw_id.isdigit() or len(raw_id) > 18:
                return _text_error("bad batch_id", 400)
            spool = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes it
            file_services.batch_zip(project=project, batch_id=int(raw_id), auth_str=auth_str, out=spool)
            spool.seek(0)
            return FileResponse(spool, as_attachment=True, filename=f"batch_{raw_id}.zip")
    except SubmitError as exc:
        status = 403 if "auth" in exc.message else 404
        return _text_error(exc.message, status)
    return _text_error("bad command", 400)
