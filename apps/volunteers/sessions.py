"""Log-in to a project's pages: which account a browser session is logged in as.

Log-in is per project and session based: the session holds the Account id and a keyed hash
of its password hash and authenticator, so changing either logs the session out. These are
Accounts (BOINC users), not Django auth users.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.crypto import constant_time_compare, salted_hmac

from apps.core import clock
from apps.projects.models import Project
from apps.volunteers.models import Account

SESSION_SALT = "cobblestone.account-session"


def _session_key(project: Project) -> str:
    return f"cobblestone.account.{project.pk}"


def _session_check(account: Account) -> str:
    return salted_hmac(
        SESSION_SALT, f"{account.pk}:{account.passwd_hash}:{account.authenticator}"
    ).hexdigest()


def session_account(request: HttpRequest, project: Project) -> Account | None:
    """The Account logged in to this project in this session, if it is still valid."""
    entry = request.session.get(_session_key(project))
    if not isinstance(entry, dict):
        return None
    account = Account.objects.select_related("team").filter(project=project, pk=entry.get("id")).first()  # type: ignore[misc]  # None: no account
    if account is None or not constant_time_compare(str(entry.get("check", "")), _session_check(account)):
        return None
    return account


def session_login(request: HttpRequest, project: Project, account: Account) -> None:
    request.session.cycle_key()  # no session fixation
    request.session[_session_key(project)] = {"id": account.pk, "check": _session_check(account)}
    # For db_purge's idle-account rule: an account in use is never idle.
    Account.objects.filter(pk=account.pk).update(last_login_time=clock.now())


def session_logout(request: HttpRequest, project: Project) -> None:
    request.session.pop(_session_key(project), None)
