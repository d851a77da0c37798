"""Account deletion, as a volunteer asks for it or an admin does it.

1. Request: the volunteer gives their password (account_delete_check); a signed link valid for LINK_VALID_SECONDS
   is mailed to the account's address (account_delete_request).
2. Confirmation: the link, opened in the volunteer's session, starts the grace period of
   COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS (account_delete_confirm); the volunteer may cancel
   until it ends (account_delete_cancel).
3. Deletion (account_delete, from the periodic pass or the admin's action): the account
   row stays, emptied of everything that names the person, so the rows that point at it
   (hosts, results, credit history) stay consistent and its credit stays in the project's
   totals; the team's stored totals are not touched either. BOINC calls this
   "obfuscating" an account.

A link carries the account id and a digest of the account's key, password hash, address
and request time: a newer request, a password or address change, a confirmation or the
deletion itself make every older link useless.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.utils.crypto import constant_time_compare, salted_hmac

from apps.hosts.models import DeletedHost, Host
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.volunteers.models import (
    Account,
    BadgeAward,
    DeletedAccount,
    LoginLockout,
    Team,
    make_passwd_hash,
    new_authenticator,
)
from apps.volunteers.services import account_password_matches

LINK_SALT = "cobblestone.account-deletion"
LINK_VALID_SECONDS = 86400  # as BOINC's delete-account token
DELETED_NAME = "deleted"


class AccountDeleteError(Exception):
    """Why a deletion step was refused, in words for the volunteer."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def grace_period() -> timedelta:
    return timedelta(days=settings.COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS)


def _digest(account: Account) -> str:
    requested = account.delete_requested.isoformat() if account.delete_requested else ""
    state = f"{account.pk}:{account.authenticator}:{account.passwd_hash}:{account.email_addr}:{requested}"
    return salted_hmac(LINK_SALT, state).hexdigest()[:32]


def _refuse_deleted(account: Account) -> None:
    if account.deleted_time is not None:
        raise AccountDeleteError("This account is deleted.")
    if account.delete_after is not None:
        raise AccountDeleteError(
            f"Your account is already to be deleted on {account.delete_after:%Y-%m-%d %H:%M} UTC."
        )


def account_delete_check(*, account: Account, password: str) -> None:
    """Whether the account may ask for its deletion with ``password``: AccountDeleteError
    (field="password" for a wrong password) if not. Changes nothing."""
    _refuse_deleted(account)
    if not account_password_matches(account=account, password=password):
        raise AccountDeleteError("Wrong password.", field="password")


def account_delete_request(*, account: Account, now: datetime) -> str:
    """Record a request that passed account_delete_check; returns the token of the link to
    mail. Links of earlier requests stop working."""
    _refuse_deleted(account)
    Account.objects.filter(pk=account.pk).update(delete_requested=now)
    account.delete_requested = now
    return signing.dumps([account.pk, _digest(account)], salt=LINK_SALT)


def account_delete_confirm(*, account: Account, token: str, now: datetime) -> datetime:
    """Confirm the request the link of ``token`` was sent for; returns when the account
    will be deleted (at once when the grace period is zero)."""
    _refuse_deleted(account)
    try:
        userid, digest = signing.loads(token, salt=LINK_SALT, max_age=LINK_VALID_SECONDS)
    except signing.SignatureExpired:
        raise AccountDeleteError(
            "This link has expired (links work for one day). Ask for a new one."
        ) from None
    except (signing.BadSignature, TypeError, ValueError):
        raise AccountDeleteError("This link is not valid. Copy the whole link from the message.") from None
    if userid != account.pk:
        raise AccountDeleteError("This link is for another account. Log in to that account to use it.")
    if account.delete_requested is None or not constant_time_compare(str(digest), _digest(account)):
        raise AccountDeleteError(
            "This link was used already or replaced by a newer one, or your account changed since. "
            "Ask for a new one."
        )
    due = now + grace_period()
    with transaction.atomic():
        claimed = Account.objects.filter(
            pk=account.pk, delete_requested=account.delete_requested, delete_after__isnull=True
        ).update(delete_requested=None, delete_after=due)
    if not claimed:
        raise AccountDeleteError("This link was used already. Ask for a new one.")
    account.delete_requested, account.delete_after = None, due
    if due <= now:
        account_delete(account_id=account.pk, now=now)
    return due


def account_delete_cancel(*, account: Account) -> None:
    """Keep the account: the confirmed deletion, still in its grace period, is called off."""
    if account.deleted_time is not None or account.delete_after is None:
        raise AccountDeleteError("Your account is not to be deleted.")
    Account.objects.filter(pk=account.pk, deleted_time__isnull=True).update(delete_after=None)
    account.delete_after = None


def _record_exported(account: Account, now: datetime) -> None:
    """Tell stats sites to drop the user and their hosts (as deleting the rows would)."""
    if not account.stats_export_consent:
        return
    DeletedAccount.objects.update_or_create(
        project_id=account.project_id,
        userid=account.pk,
        defaults={"cpid": account.public_cpid, "create_time": now},
    )
    for host_id, host_cpid in account.hosts.values_list("id", "host_cpid"):
        DeletedHost.objects.update_or_create(
            project_id=account.project_id,
            hostid=host_id,
            defaults={"host_cpid": host_cpid, "create_time": now},
        )


def account_delete(*, account_id: int, now: datetime) -> bool:
    """Remove the person from the account; False if it was deleted already.

    1. Record the user and their hosts for the export's deletion lists (if exported).
    2. Leave the team: a founder leaves it without founder, as BOINC does; an open
       foundership request of theirs is dropped. The team's totals keep their credit.
    3. Hosts stay (their results are science records) without the names and addresses
       that point at the person.
    4. Empty the account: name, address, keys, password, preferences, badges and log-in
       lockout records; every session, account key and weak key stops working, since all
       are derived from the key and the password hash. Its credit figures stay.
    """
    with transaction.atomic():
        account = Account.objects.select_for_update().filter(pk=account_id, deleted_time__isnull=True).first()
        if account is None:
            return False
        _record_exported(account, now)
        Team.objects.filter(founder=account).update(founder=None)
        Team.objects.filter(ping_user=account).update(ping_user=None, ping_time=None)
        Host.objects.filter(account=account).update(domain_name="", last_ip_addr="", venue="")
        BadgeAward.objects.filter(account=account).delete()
        LoginLockout.objects.filter(account__iexact=account.email_addr).delete()
        anonymous = f"deleted_{account.pk}_{secrets.token_hex(8)}"
        Account.objects.filter(pk=account.pk).update(
            name=DELETED_NAME,
            email_addr=f"{anonymous}@deleted.invalid",
            authenticator=f"deleted_{new_authenticator()}",
            cross_project_id=new_authenticator(),
            passwd_hash=make_passwd_hash(None),
            team=None,
            country="",
            url="",
            venue="",
            project_prefs="",
            global_prefs="",
            show_hosts=False,
            stats_export_consent=False,
            delete_requested=None,
            delete_after=None,
            deleted_time=now,
        )
    return True


def account_deletions_due(*, project: Project, now: datetime, limit: int = 100) -> DaemonPass:
    """Delete the project's accounts whose grace period has ended, at most ``limit``."""
    due = Account.objects.filter(
        project=project, delete_after__lte=now, deleted_time__isnull=True
    ).values_list("id", flat=True)[:limit]
    deleted = sum(account_delete(account_id=pk, now=now) for pk in list(due))
    return DaemonPass(items=deleted, message=f"{deleted} accounts deleted")
