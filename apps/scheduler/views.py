"""The XML face of the scheduler: the URL the BOINC client POSTs its scheduler_request to.

The client labels the body application/x-www-form-urlencoded, so the view reads the raw
body and never touches request.POST; it is exempt from CSRF. Whatever goes wrong, the
client gets a well-formed <scheduler_reply> (or 413 for an oversized body), never a 500.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt

from apps.core import clock
from apps.protocol import ProtocolError, error_reply, parse_request, render_reply
from apps.scheduler.services import scheduler_request_handle
from apps.scheduler.services.catalog import project_by_slug

logger = logging.getLogger(__name__)
XML = "text/xml; charset=utf-8"


def read_body(request: HttpRequest, limit: int) -> bytes | None:
    """The raw body, or None if it is larger than ``limit`` (read no further than that)."""
    declared = request.META.get("CONTENT_LENGTH") or "0"
    try:
        if int(declared) > limit:
            return None
    except ValueError:
        return None
    body = request.read(limit + 1)
    return None if len(body) > limit else body


@csrf_exempt
def scheduler_xml(request: HttpRequest, slug: str) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    project = project_by_slug(slug)
    if project is None:
        raise Http404("No such project.")
    limit = settings.COBBLESTONE_MAX_REQUEST_BYTES
    body = read_body(request, limit)
    if body is None:
        return HttpResponse(
            error_reply(f"Request too large (limit {limit} bytes)."), status=413, content_type=XML
        )
    try:
        req = parse_request(body, max_bytes=limit)
    except ProtocolError as exc:
        logger.warning("scheduler %s: bad request from %s: %s", slug, request.META.get("REMOTE_ADDR"), exc)
        return HttpResponse(error_reply(f"Bad scheduler request: {exc}", request_delay=600), content_type=XML)
    try:
        reply = scheduler_request_handle(
            project=project, req=req, now=clock.now(), remote_addr=request.META.get("REMOTE_ADDR", "")
        )
    except Exception:
        logger.exception("scheduler %s: request failed", slug)
        return HttpResponse(
            error_reply("Server error; please try again later.", request_delay=600), content_type=XML
        )
    try:
        body = render_reply(reply)
    except ProtocolError:
        # A bug (reply_build keeps stored names writable): the RPC has committed and the
        # client will not see what it was sent, so log it, and still answer in XML.
        logger.exception("scheduler %s: reply could not be written", slug)
        return HttpResponse(
            error_reply("Server error; please try again later.", request_delay=600), content_type=XML
        )
    return HttpResponse(body, content_type=XML)
