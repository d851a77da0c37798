"""How one gets into an account: creation, lookup by email address or account key, the
password check, and what an account manager reads of an account.

The attach RPCs (create_account.php, lookup_account.php, am_get_info.php), the sign-up and
log-in pages and the XML web RPCs that take an account key call these; the errors are BOINC's
numbers (apps.protocol.WebRpcError), which each caller answers in its own form.
"""

from __future__ import annotations

import hashlib
import logging
import re

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from apps.projects.models import Project
from apps.protocol import AmInfo, WebRpcError, xml_fragment_problem
from apps.volunteers.models import Account, make_passwd_hash, passwd_hash_dummy_check
from apps.volunteers.services.teams import team_joinable_named
from apps.volunteers.services.weak_keys import account_weak_key

logger = logging.getLogger(__name__)

ERR_GENERIC = -1  # what the stock pages send for a missing or malformed argument
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


def account_with_key(*, project: Project, authenticator: str) -> Account | None:
    """The account (with its team) whose key, never its weak key, ``authenticator`` is."""
    if not authenticator:
        return None
    return Account.objects.select_related("team").filter(project=project, authenticator=authenticator).first()


def account_by_key(*, project: Project, authenticator: str) -> Account:
    """The account whose key (never its weak key) ``authenticator`` is; -136 if none, -183
    while the project's web site is stopped."""
    if project.web_stopped:
        raise AccountRpcError(WebRpcError.PROJECT_DOWN)
    account = account_with_key(project=project, authenticator=authenticator)
    if account is None:
        raise AccountRpcError(WebRpcError.NOT_FOUND)
    return account


def am_info_get(*, project: Project, authenticator: str) -> AmInfo:
    """am_get_info.php: what an account manager reads of the account with this key."""
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
