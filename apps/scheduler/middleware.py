"""While the database is unreachable, every URL answers as BOINC does when a project is down.

The scheduler gets a well-formed ``<scheduler_reply>`` with a message, ``<project_is_down/>``
and a ``request_delay`` (HTTP 200: the stock client reads no body of another status, so it
would neither show the message nor honour the delay); the account RPCs BOINC's ``<error>``
with -183 (ERR_PROJECT_DOWN), ``get_project_config.php`` its ``<error_num>``; the upload
handler a transient error, which the client retries; downloads and the JSON API a 503 with
Retry-After; pages a plain "down for maintenance" page (``503.html``) that needs no
database. Never a traceback, whatever DEBUG says.

A database error raised by a view reaches ``process_exception``; one raised by other
middleware (a session saved after the view) has already become a 500 page when it gets
here, so a ``got_request_exception`` receiver marks the request and the 500 is replaced.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve

from apps.protocol import (
    MessagePriority,
    ProjectConfig,
    ReplyMessage,
    SchedulerReply,
    UploadStatus,
    WebRpcError,
    render_error,
    render_project_config,
    render_reply,
    render_upload_reply,
)
from apps.scheduler.admission import busy_delay, busy_reply

logger = logging.getLogger(__name__)

# What a lost, refused or timed-out database connection raises (SQLite's "database is
# locked" too: the client should come back later all the same).
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
DOWN_MESSAGE = "Project is down for maintenance; please try again later."
XML = "text/xml; charset=utf-8"
WEB_RPCS = frozenset({"lookup_account", "create_account", "am_get_info"})
_MARK = "_cobblestone_database_unavailable"


def scheduler_down_reply(delay: int) -> bytes:
    """The stock scheduler's reply when it cannot open its database."""
    return render_reply(
        SchedulerReply(
            messages=(ReplyMessage(DOWN_MESSAGE, MessagePriority.LOW),),
            request_delay=float(delay),
            project_is_down=True,
        )
    )


# SQLSTATEs of a transaction that lost a race with another (deadlock, serialization failure,
# a lock not granted): the database is up, and the same request succeeds a moment later.
CONFLICT_SQLSTATES = frozenset({"40P01", "40001", "55P03"})


def is_conflict(error: BaseException) -> bool:
    """A lost race between transactions, not an outage (SQLite says "database is locked")."""
    if getattr(error.__cause__, "sqlstate", None) in CONFLICT_SQLSTATES:
        return True
    return "database is locked" in str(error)


def outage_response(request: HttpRequest, *, conflict: bool = False) -> HttpResponse:
    """The answer for ``request`` while the database is unreachable, by the kind of URL.

    A ``conflict`` (a transaction that lost a race) gets the same kinds of answers with the
    short delay of a busy server, and the scheduler its "busy" reply: the project is not down.
    """
    delay = int(busy_delay()) if conflict else settings.COBBLESTONE_MAINTENANCE_DELAY
    name = _url_name(request)
    if name == "scheduler" and conflict:
        response = HttpResponse(busy_reply(delay), content_type=XML)
    elif name == "scheduler":
        response = HttpResponse(scheduler_down_reply(delay), content_type=XML)
    elif name in WEB_RPCS:
        response = HttpResponse(render_error(WebRpcError.PROJECT_DOWN, DOWN_MESSAGE), content_type=XML)
    elif name == "get_project_config":
        config = ProjectConfig(web_stopped=True, error_num=WebRpcError.PROJECT_DOWN)
        response = HttpResponse(render_project_config(config), content_type=XML)
    elif name == "file_upload_handler":
        body = render_upload_reply(UploadStatus.TRANSIENT, DOWN_MESSAGE)
        response = HttpResponse(body, content_type=XML)
    elif name == "download":
        response = HttpResponse(f"{DOWN_MESSAGE}\n", content_type="text/plain", status=503)
    elif name == "scheduler-json" or request.path.startswith("/api/"):
        text = json.dumps({"error": DOWN_MESSAGE, "project_is_down": True, "request_delay": delay})
        response = HttpResponse(text, content_type="application/json", status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(delay)
    return response


def _url_name(request: HttpRequest) -> str | None:
    match = request.resolver_match
    if match is None:  # the error came before URL resolution (another middleware)
        try:
            match = resolve(request.path_info)
        except Resolver404:
            return None
    return match.url_name


class DatabaseOutageMiddleware:
    """Turns an unreachable database into the client's "project is down" answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        error = getattr(request, _MARK, None)
        if error is not None and response.status_code >= 500:
            return self._answer(request, error)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DATABASE_UNAVAILABLE):
            return self._answer(request, exception)
        return None

    @staticmethod
    def _answer(request: HttpRequest, error: BaseException) -> HttpResponse:
        conflict = is_conflict(error)
        what = "transaction conflict" if conflict else "database unavailable"
        logger.warning("%s %s: %s: %s", request.method, request.path, what, error)
        return outage_response(request, conflict=conflict)


def _mark_request(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """Remember a database outage that Django is about to turn into a 500 page."""
    error = sys.exc_info()[1]
    if request is not None and isinstance(error, DATABASE_UNAVAILABLE):
        setattr(request, _MARK, error)


got_request_exception.connect(_mark_request, dispatch_uid="cobblestone.database_outage")
