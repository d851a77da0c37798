"""Account edits from the volunteer's pages: name, country and web site; email address;
password; default location of new computers.

The BOINC client logs in with md5(password + lower(email)) (protocol 1.4), so the stored
hash depends on the email address as much as on the password. Changing the address
therefore needs the password, to derive the hash the client will send from then on (as
BOINC's edit_email_action.php); a password change or reset derives it from the new password
and the current address. md5(account key + email), which BOINC also accepts, follows the
address by itself. Every write touches only its own columns: the scheduler and the
validator write the same row's credit meanwhile.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.volunteers.models import Account, make_passwd_hash, passwd_hash

VENUE_CHOICES = (("", "---"), ("home", "Home"), ("school", "School"), ("work", "Work"))


class AccountEditError(Exception):
    """Why an account edit was refused, in words for the volunteer."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _update(account: Account, **values: object) -> None:
    Account.objects.filter(pk=account.pk).update(**values)
    for field, value in values.items():
        setattr(account, field, value)


def account_password_matches(*, account: Account, password: str) -> bool:
    """Whether ``password`` is the account's, checked as lookup_account.php checks a client."""
    return account.check_passwd_hash(passwd_hash(password, account.email_addr))


def account_info_update(*, account: Account, name: str, country: str, url: str) -> None:
    """The name shown to others, the country and the web site (checked by the caller's form)."""
    _update(account, name=name, country=country, url=url)


def account_email_change(*, account: Account, password: str, new_email: str) -> str:
    """Move the account to ``new_email``; returns the old address (to be told of the change).

    Needs the current password: the stored hash is re-derived from it and the new address,
    so the BOINC client's log-in with the new address works at once."""
    if not account_password_matches(account=account, password=password):
        raise AccountEditError("Wrong password.", field="password")
    email = new_email.strip().lower()
    old = account.email_addr
    if email == old.lower():
        raise AccountEditError("This is the account's address already.", field="email")
    taken = Account.objects.filter(project_id=account.project_id, email_addr__iexact=email).exclude(
        pk=account.pk
    )
    if taken.exists():
        raise AccountEditError("Another account of this project uses this address.", field="email")
    # Hashed before the transaction: the slow hash must not hold SQLite's write lock.
    stored = make_passwd_hash(passwd_hash(password, email))
    try:
        with transaction.atomic():
            _update(account, email_addr=email, passwd_hash=stored)
    except IntegrityError:
        raise AccountEditError("Another account of this project uses this address.", field="email") from None
    return old


def account_password_set(*, account: Account, password: str) -> None:
    """The new password (a change or a reset), hashed with the current address."""
    _update(account, passwd_hash=make_passwd_hash(passwd_hash(password, account.email_addr)))


def account_venue_set(*, account: Account, venue: str) -> None:
    """The location the scheduler gives the account's new computers (BOINC's user.venue)."""
    if venue not in dict(VENUE_CHOICES):
        raise AccountEditError("Choose home, school, work or none.", field="venue")
    _update(account, venue=venue)
