"""The XML face of the scheduler: the URL the BOINC client POSTs its scheduler_request to.

The client labels the body application/x-www-form-urlencoded, so the view reads the raw
body and never touches request.POST; it is exempt from CSRF. Whatever goes wrong, the
client gets a well-formed <scheduler_reply>, never a 500; the HTTP status says what kind of
refusal it is (404 no such project, 405 not a POST, 413 too large, 400/415 an unreadable body).
An unreachable database is answered by DatabaseOutageMiddleware ("project is down"); a
saturated scheduler tells the client it is busy and when to come back (admission.py).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from apps.core import clock
from apps.core.metrics import scheduler_rpc_observe
from apps.core.stages import stage
from apps.projects.models import Project
from apps.protocol import ProtocolError, error_reply, parse_request, render_reply
from apps.scheduler.admission import busy_delay, busy_reply, scheduler_slot
from apps.scheduler.middleware import DATABASE_UNAVAILABLE
from apps.scheduler.services import scheduler_request_handle
from apps.scheduler.services.catalog import project_by_slug

logger = logging.getLogger(__name__)
XML = "text/xml; charset=utf-8"


class BodyRefused(Exception):
    """A request body the server will not read: the HTTP status and the reason to show."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def read_body(request: HttpRequest, limit: int) -> bytes:
    """The raw body, read no further than ``limit`` bytes.

    Raises BodyRefused: 413 for a body over the limit, 400 for a Content-Length that is
    not a number, 415 for a compressed body (no BOINC client sends one, and decoding it
    would let a small request grow past the limit).
    """
    encoding = request.META.get("HTTP_CONTENT_ENCODING", "").strip().lower()
    if encoding not in ("", "identity"):
        raise BodyRefused(
            415, f"Content-Encoding {encoding[:40]!r} is not accepted; send the request uncompressed."
        )
    declared = request.META.get("CONTENT_LENGTH") or "0"
    try:
        length = int(declared)
    except ValueError:
        raise BodyRefused(400, "Content-Length is not a number.") from None
    if length > limit:
        raise BodyRefused(413, f"Request too large (limit {limit} bytes).")
    body = request.read(limit + 1)
    if len(body) > limit:
        raise BodyRefused(413, f"Request too large (limit {limit} bytes).")
    return body


@csrf_exempt
def scheduler_xml(request: HttpRequest, slug: str) -> HttpResponse:
    started = time.perf_counter()
    with stage("scheduler_rpc"):
        response, outcome, project = _scheduler_xml(request, slug)
    scheduler_rpc_observe(
        project=project.slug if project else "", outcome=outcome, seconds=time.perf_counter() - started
    )
    return response


def _scheduler_xml(request: HttpRequest, slug: str) -> tuple[HttpResponse, str, Project | None]:
    """The reply, what became of the request (the metrics' outcome label) and the project."""
    if request.method != "POST":
        response = HttpResponse(
            error_reply("The scheduler takes a scheduler_request sent by POST."), status=405, content_type=XML
        )
        response["Allow"] = "POST"
        return response, "not_post", None
    limit = settings.COBBLESTONE_MAX_REQUEST_BYTES
    try:
        body = read_body(request, limit)
    except BodyRefused as refused:
        response = HttpResponse(error_reply(refused.message), status=refused.status, content_type=XML)
        return response, "refused", None
    # Before any database work: a busy reply must cost next to nothing.
    with scheduler_slot(request) as admitted:
        if not admitted:
            delay = busy_delay()
            response = HttpResponse(busy_reply(delay), content_type=XML)
            response["Retry-After"] = str(int(delay))
            return response, "busy", None
        return _answer(request, slug, body)


def _answer(request: HttpRequest, slug: str, body: bytes) -> tuple[HttpResponse, str, Project | None]:
    """Parse, handle and reply to one admitted scheduler request."""
    project = project_by_slug(slug)
    if project is None:
        return (
            HttpResponse(error_reply("No project at this URL."), status=404, content_type=XML),
            "no_project",
            None,
        )
    try:
        req = parse_request(body, max_bytes=settings.COBBLESTONE_MAX_REQUEST_BYTES)
    except ProtocolError as exc:
        logger.warning("scheduler %s: bad request from %s: %s", slug, request.META.get("REMOTE_ADDR"), exc)
        refusal = error_reply(f"Bad scheduler request: {exc}", request_delay=600)
        return HttpResponse(refusal, content_type=XML), "bad_request", project
    try:
        reply = scheduler_request_handle(
            project=project, req=req, now=clock.now(), remote_addr=request.META.get("REMOTE_ADDR", "")
        )
    except DATABASE_UNAVAILABLE:
        raise  # the middleware's "project is down" reply
    except Exception:
        logger.exception("scheduler %s: request failed", slug)
        return _server_error(), "error", project
    try:
        reply_body = render_reply(reply)
    except ProtocolError:
        # A bug (reply_build keeps stored names writable): the RPC has committed and the
        # client will not see what it was sent, so log it, and still answer in XML.
        logger.exception("scheduler %s: reply could not be written", slug)
        return _server_error(), "error", project
    return HttpResponse(reply_body, content_type=XML), "ok", project


def _server_error() -> HttpResponse:
    return HttpResponse(
        error_reply("Server error; please try again later.", request_delay=600), content_type=XML
    )
