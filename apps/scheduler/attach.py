"""Attach-time web RPCs (docs/protocol.md), the account managers' RPCs, and the account
services behind them.

``get_project_config.php``, ``lookup_account.php``, ``create_account.php``,
``am_get_info.php``, ``am_set_info.php`` and ``am_set_host_info.php`` under each project's
master URL, answering with BOINC's XML and error numbers as the stock PHP pages do. Query strings are decoded by Django (the client
escapes '.' as %2E). The same services back the sign-up and log-in pages.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt

from apps.applications.models import AppVersion
from apps.hosts.models import Host
from apps.projects.models import Project
from apps.protocol import (
    AmInfo,
    PlatformDesc,
    ProjectConfig,
    WebRpcError,
    render_account_out,
    render_am_get_info_reply,
    render_error,
    render_project_config,
    render_success_reply,
    xml_fragment_problem,
)
from apps.scheduler.ratelimits import login_failed, login_succeeded, login_wait, signup_wait, wait_text
from apps.scheduler.services.prefs import host_venue_set
from apps.volunteers.models import Account, make_passwd_hash, passwd_hash_dummy_check
from apps.volunteers.services import AccountEditError, team_joinable_named
from apps.volunteers.services.weak_keys import account_weak_key

logger = logging.getLogger(__name__)

XML = "text/xml; charset=utf-8"
ERR_GENERIC = -1  # what the stock pages send for a missing or malformed argument
# ERR_RETRY (lib/error_numbers.h): "try again later"; the Manager's attach wizard retries on it
# and then shows the message, which says how long to wait.
ERR_RETRY = -199
# Answers that tell a guesser a password (or an email) was wrong: counted by the rate limits.
LOGIN_FAILURES = frozenset({WebRpcError.NOT_FOUND, WebRpcError.BAD_PASSWD, WebRpcError.NOT_UNIQUE})
MD5_HEX_LEN = 32
MAX_NAME_LEN = Account._meta.get_field("name").max_length or 200
MAX_EMAIL_LEN = Account._meta.get_field("email_addr").max_length or 254
# C0 and C1 controls (tab and newline too): invisible in a name, and XML cannot carry most.
_CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f]")
# Lone surrogates and U+FFFE/U+FFFF: not text, so no XML reply could carry the name.
_NON_CHARACTERS = re.compile("[\ud800-\udfff\ufffe\uffff]")


class AccountRpcError(Exception):
    """A BOINC error number (and message) for an account RPC or page."""

    def __init__(self, error_num: int, message: str | None = None, *, retry_after: int | None = None) -> None:
        super().__init__(message or str(error_num))
        self.error_num = int(error_num)
        self.message = message
        self.retry_after = retry_after  # seconds, for a refusal by the rate limits


def too_many_attempts(wait: int) -> AccountRpcError:
    return AccountRpcError(ERR_RETRY, f"Too many attempts; try again in {wait_text(wait)}.", retry_after=wait)


# --- pure checks -----------------------------------------------------------------------


def user_name_problem(name: str) -> str | None:
    """Why BOINC's is_valid_user_name() would refuse ``name``, or None."""
    if name.strip() != name:
        return "user name cannot have leading or trailing white space"
    if not name:
        return "user name must be nonempty"
    if _CONTROL_CHARS.search(name):
        return "user name may not contain control characters"
    if _NON_CHARACTERS.search(name):
        return "user name may not contain invalid Unicode characters"
    if "<" in name or ">" in name:
        return "user name may not contain HTML tags"
    if name.replace(".", "", 1).isdigit():
        return "user name may not be a number"
    if len(name) > MAX_NAME_LEN:
        return f"user name may have at most {MAX_NAME_LEN} characters"
    return None


def email_is_valid(email: str) -> bool:
    if len(email) > MAX_EMAIL_LEN:
        return False
    try:
        validate_email(email)
    except ValidationError:
        return False
    return True


def normalize_hash(value: str) -> str:
    return value.strip().lower()


# --- services --------------------------------------------------------------------------


def account_find(*, project: Project, email_addr: str) -> Account | None:
    """The account with this email (exact spelling first, then ignoring case)."""
    email = email_addr.strip()
    accounts = Account.objects.filter(project=project, email_addr__iexact=email).order_by("id")
    exact = [a for a in accounts if a.email_addr == email]
    return exact[0] if exact else next(iter(accounts), None)


def account_lookup(*, project: Project, email_addr: str, passwd_hash: str | None) -> Account | None:
    """lookup_account.php: the account if the hash matches; None when no hash was given.

    The hash is md5(password + lower(email)) as the client computes it; BOINC also
    accepts md5(authenticator + email). An account with no password yet gets the
    latter as its password, as the stock page does. The stored hash is never a login
    (Account.check_passwd_hash).
    """
    if project.web_stopped:
        raise AccountRpcError(WebRpcError.PROJECT_DOWN)
    account = account_find(project=project, email_addr=email_addr)
    if account is None:
        if passwd_hash is not None:
            passwd_hash_dummy_check(normalize_hash(passwd_hash))
        raise AccountRpcError(WebRpcError.NOT_FOUND)
    if passwd_hash is None:
        return None
    if not account.passwd_hash:
        account.passwd_hash = make_passwd_hash(account_key_hash(account))
        account.save(update_fields=["passwd_hash"])
    if not account.check_passwd_hash(normalize_hash(passwd_hash)):
        raise AccountRpcError(WebRpcError.BAD_PASSWD)
    return account


def account_key_hash(account: Account) -> str:
    """md5(authenticator + email): the password hash of an account that never set one."""
    return hashlib.md5((account.authenticator + account.email_addr.lower()).encode()).hexdigest()


def account_create(
    *,
    project: Project,
    email_addr: str,
    passwd_hash: str,
    user_name: str,
    team_name: str = "",
    stats_export_consent: bool = True,
) -> tuple[Account, bool]:
    """create_account.php: a new account, or the existing one if the hash matches (its
    ``stats_export_consent`` is then left as it is).

    Returns (account, created). Errors: -183 web stopped, -208 creation disabled,
    -188 bad user name, -205 bad email, -1 hash not 32 characters, -137 email taken.
    """
    if project.web_stopped:
        raise AccountRpcError(WebRpcError.PROJECT_DOWN)
    if project.account_creation_disabled:
        raise AccountRpcError(WebRpcError.ACCT_CREATION_DISABLED)
    email = email_addr.strip().lower()
    problem = user_name_problem(user_name)
    if problem:
        raise AccountRpcError(WebRpcError.BAD_USER_NAME, problem)
    if not email_is_valid(email):
        raise AccountRpcError(WebRpcError.BAD_EMAIL_ADDR)
    digest = normalize_hash(passwd_hash)
    if len(digest) != MD5_HEX_LEN:
        raise AccountRpcError(ERR_GENERIC, "password hash length not 32")
    existing = account_find(project=project, email_addr=email)
    if existing is not None:
        return _existing_account(existing, digest), False
    # Hashed before the transaction: the slow hash must not hold SQLite's write lock.
    stored_hash = make_passwd_hash(digest)
    try:
        with transaction.atomic():
            # A team closed to new members is not joined; the account is made without one,
            # as BOINC's create_account.php makes it.
            team = team_joinable_named(project_id=project.pk, name=team_name)
            account = Account.objects.create(
                project=project,
                name=user_name,
                email_addr=email,
                passwd_hash=stored_hash,
                team=team,
                stats_export_consent=stats_export_consent,
            )
    except IntegrityError:
        # Another request created it between the lookup and the insert.
        existing = account_find(project=project, email_addr=email)
        if existing is None:
            raise
        return _existing_account(existing, digest), False
    logger.info("project %s: account %s created", project.slug, account.pk)
    return account, True


def _existing_account(account: Account, digest: str) -> Account:
    if not account.check_passwd_hash(digest):
        raise AccountRpcError(WebRpcError.NOT_UNIQUE)
    return account


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


def account_by_key(*, project: Project, authenticator: str) -> Account:
    """The account whose key (never its weak key) ``authenticator`` is; -136 if none, -183
    while the project's web site is stopped."""
    if project.web_stopped:
        raise AccountRpcError(WebRpcError.PROJECT_DOWN)
    account = (
        Account.objects.select_related("team").filter(project=project, authenticator=authenticator).first()
        if authenticator
        else None
    )
    if account is None:
        raise AccountRpcError(WebRpcError.NOT_FOUND)
    return account


def am_info_get(*, project: Project, authenticator: str) -> AmInfo:
    account = account_by_key(project=project, authenticator=authenticator)
    return AmInfo(
        id=account.pk,
        name=account.name,
        country=account.country,
        weak_auth=account_weak_key(account),
        cpid=account.public_cpid,  # the one the statistics export shows
        create_time=int(account.create_time.timestamp()),
        # Stored text that is not XML is left out rather than failing the whole reply.
        global_prefs="" if xml_fragment_problem(account.global_prefs) else account.global_prefs,
        project_prefs="" if xml_fragment_problem(account.project_prefs) else account.project_prefs,
        url=account.url,
        send_email=False,
        show_hosts=account.show_hosts,
        teamid=account.team_id or 0,
        venue=account.venue,
        teamfounder=account.team is not None and account.team.founder_id == account.pk,
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
