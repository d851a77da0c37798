"""Attach-time web RPCs (docs/protocol.md) and the account managers' RPCs.

``get_project_config.php``, ``lookup_account.php``, ``create_account.php``,
``am_get_info.php``, ``am_set_info.php`` and ``am_set_host_info.php`` under each project's
master URL, answering with BOINC's XML and error numbers as the stock PHP pages do. Query strings are decoded by Django (the client
escapes '.' as %2E). The accounts' services are the volunteers app's
(apps.volunteers.services.access), which the sign-up and log-in pages call too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt

from apps.applications.models import AppVersion
from apps.hosts.models import Host
from apps.projects.models import Project
from apps.protocol import (
    PlatformDesc,
    ProjectConfig,
    WebRpcError,
    render_account_out,
    render_am_get_info_reply,
    render_error,
    render_project_config,
    render_success_reply,
)
from apps.scheduler.ratelimits import login_failed, login_succeeded, login_wait, signup_wait, wait_text
from apps.scheduler.services.prefs import host_venue_set
from apps.volunteers.services import (
    ERR_GENERIC,
    AccountEditError,
    AccountRpcError,
    account_by_key,
    account_create,
    account_lookup,
    am_info_get,
)

XML = "text/xml; charset=utf-8"
# ERR_RETRY (lib/error_numbers.h): "try again later"; the Manager's attach wizard retries on it
# and then shows the message, which says how long to wait.
ERR_RETRY = -199
# Answers that tell a guesser a password (or an email) was wrong: counted by the rate limits.
LOGIN_FAILURES = frozenset({WebRpcError.NOT_FOUND, WebRpcError.BAD_PASSWD, WebRpcError.NOT_UNIQUE})


def too_many_attempts(wait: int) -> AccountRpcError:
    return AccountRpcError(ERR_RETRY, f"Too many attempts; try again in {wait_text(wait)}.", retry_after=wait)


# --- services --------------------------------------------------------------------------


def project_config_get(*, project: Project) -> ProjectConfig:
    """get_project_config.php for this project: names, limits, switches and platforms."""
    rows = (
        AppVersion.objects.filter(app__project=project, app__deprecated=False, deprecated=False)
        .values_list("platform__name", "platform__user_friendly_name", "plan_class")
        .distinct()
        .order_by("platform__name", "plan_class")
    )
    return ProjectConfig(
        name=project.name,
        master_url=project.master_url,
        web_rpc_url_base=project.master_url,
        min_passwd_length=project.min_passwd_length,
        account_creation_disabled=project.account_creation_disabled,
        web_stopped=project.web_stopped,
        sched_stopped=project.sched_stopped,
        min_client_version=project.min_core_client_version or None,
        platforms=tuple(
            PlatformDesc(platform_name=name, user_friendly_name=friendly or name, plan_class=plan_class)
            for name, friendly, plan_class in rows
        ),
        error_num=WebRpcError.PROJECT_DOWN if project.web_stopped else None,
    )


def am_host_venue_set(*, project: Project, authenticator: str, hostid: str, venue: str) -> None:
    """am_set_host_info.php: the location of one of the account's computers; -136 if the
    host is not the account's."""
    account = account_by_key(project=project, authenticator=authenticator)
    host = Host.objects.filter(project=project, account=account, pk=int_param("hostid", hostid)).first()
    if host is None:
        raise AccountRpcError(WebRpcError.NOT_FOUND)
    try:
        host_venue_set(host=host, venue=venue.strip())
    except AccountEditError:
        raise AccountRpcError(ERR_GENERIC, "bad venue: home, school, work or empty") from None


def int_param(name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise AccountRpcError(ERR_GENERIC, f"missing or bad parameter: {name}") from None
    if not 0 < number < 2**63:
        raise AccountRpcError(ERR_GENERIC, f"missing or bad parameter: {name}")
    return number


# --- views -----------------------------------------------------------------------------


def _xml(body: bytes) -> HttpResponse:
    return HttpResponse(body, content_type=XML)


def _error(exc: AccountRpcError) -> HttpResponse:
    response = _xml(render_error(exc.error_num, exc.message))
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    return response


def query_param(request: HttpRequest, name: str) -> str | None:
    """A query parameter as given; every parameter these pages read comes through here."""
    value = request.GET.get(name)
    if value is not None and "\x00" in value:
        # No database text column can hold NUL (PostgreSQL refuses it outright).
        raise AccountRpcError(ERR_GENERIC, f"bad parameter: {name} may not contain NUL characters")
    return value


def required_param(request: HttpRequest, name: str) -> str:
    value = query_param(request, name)
    if value is None or not value.strip():
        raise AccountRpcError(ERR_GENERIC, f"missing or bad parameter: {name}")
    return value


def _present(request: HttpRequest, name: str) -> str:
    """A parameter that must be there but may be empty (checked by the service)."""
    value = query_param(request, name)
    if value is None:
        raise AccountRpcError(ERR_GENERIC, f"missing or bad parameter: {name}")
    return value


def _project(slug: str) -> Project | None:
    return Project.objects.filter(slug=slug).first()


def web_rpc(handler: Callable[[HttpRequest, Project], bytes]) -> Callable[[HttpRequest, str], HttpResponse]:
    """GET only; unknown project → 404; AccountRpcError → BOINC's <error> reply."""

    def view(request: HttpRequest, slug: str) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET"])
        project = _project(slug)
        if project is None:
            return HttpResponse(render_error(WebRpcError.NOT_FOUND, "No such project"), XML, status=404)
        try:
            return _xml(handler(request, project))
        except AccountRpcError as exc:
            return _error(exc)

    view.__name__ = handler.__name__
    view.__doc__ = handler.__doc__
    return view


@web_rpc
def get_project_config(request: HttpRequest, project: Project) -> bytes:
    return render_project_config(project_config_get(project=project))


@web_rpc
def lookup_account(request: HttpRequest, project: Project) -> bytes:
    email = required_param(request, "email_addr")
    digest = query_param(request, "passwd_hash") or None
    with login_attempt(request, email, proves_password=digest is not None):
        account = account_lookup(project=project, email_addr=email, passwd_hash=digest)
    return render_account_out(None if account is None else account.authenticator)


@web_rpc
def create_account(request: HttpRequest, project: Project) -> bytes:
    email = required_param(request, "email_addr")
    wait = signup_wait(request)
    if wait is not None:
        raise too_many_attempts(wait)
    # An email that is taken answers whether the password is its own: a log-in, for the limits.
    with login_attempt(request, email):
        account, _ = account_create(
            project=project,
            email_addr=email,
            passwd_hash=required_param(request, "passwd_hash"),
            user_name=_present(request, "user_name"),
            team_name=query_param(request, "team_name") or "",
        )
    return render_account_out(account.authenticator)


@contextmanager
def login_attempt(request: HttpRequest, email: str, *, proves_password: bool = True) -> Iterator[None]:
    """Refuse the attempt if its limits are reached; count it if it fails as a log-in, or if
    it checked no password (a bare existence check). A success that checked the password
    makes this client known to the account."""
    wait = login_wait(request, email)
    if wait is not None:
        raise too_many_attempts(wait)
    try:
        yield
    except AccountRpcError as exc:
        if exc.error_num in LOGIN_FAILURES:
            login_failed(request, email)
        raise
    if proves_password:
        login_succeeded(request, email)
    else:
        login_failed(request, email)  # it tells whether the address has an account


def key_attempt(request: HttpRequest, authenticator: str) -> AbstractContextManager[None]:
    """An RPC authenticated by an account key: an unknown key counts as a failed log-in
    (the limits per client address refuse a guesser), under a hash of the key tried."""
    return login_attempt(request, "key:" + hashlib.sha256(authenticator.encode()).hexdigest()[:32])


@web_rpc
def am_get_info(request: HttpRequest, project: Project) -> bytes:
    authenticator = required_param(request, "account_key")
    with key_attempt(request, authenticator):
        return render_am_get_info_reply(am_info_get(project=project, authenticator=authenticator))


@web_rpc
def am_set_host_info(request: HttpRequest, project: Project) -> bytes:
    authenticator = required_param(request, "account_key")
    hostid, venue = required_param(request, "hostid"), _present(request, "venue")
    with key_attempt(request, authenticator):
        am_host_venue_set(project=project, authenticator=authenticator, hostid=hostid, venue=venue)
    return render_success_reply("am_set_host_info_reply")


@csrf_exempt  # an answer for any client, which never holds a CSRF token
def am_set_info(request: HttpRequest, slug: str) -> HttpResponse:
    """Answered, to GET and POST, as BOINC's current server answers it: not supported.
    Account managers no longer push names, preferences or teams into a project's accounts;
    the volunteer edits them on the project's pages."""
    if _project(slug) is None:
        return HttpResponse(render_error(WebRpcError.NOT_FOUND, "No such project"), XML, status=404)
    return _error(AccountRpcError(ERR_GENERIC, "not supported"))
