"""Limits on guessing passwords, on making accounts and on reset emails (django-ratelimit's
counters).

Failed log-ins are counted three ways: per client address (all accounts), per client
address and account, and per account (from any address). A failure is a wrong password or
an unknown name at ``lookup_account.php``, the log-in form, the admin log-in or the API's
HTTP Basic authentication, an email taken with another password at ``create_account.php``
or the sign-up form, and a wrong current password on the password and email change pages
(each would tell a guesser when a password is right). Once a count reaches its limit, every
log-in it covers is refused until its window ends, the right password too; a success
counts nothing, so a volunteer who mistypes a few times is never held up.

The per-account limit is far higher than the per-address ones and does not hold back a
known client: an address the account logged in from successfully in the last
``COBBLESTONE_KNOWN_CLIENT_DAYS``. Guesses from many addresses thus slow the attacker
without locking the owner out of the places they log in from. Volunteers and staff are
counted apart (the ``LoginScope``), with their own rates. Each limit reached is logged and
recorded as a LoginLockout row, listed in the admin; rows older than ``LOCKOUT_KEEP`` are
deleted when the next one is written, so a long attack leaves a bounded record.

Attempts to make an account are counted per client address, except from the networks of
``COBBLESTONE_ACCOUNT_MANAGER_NETWORKS`` (account managers' servers make accounts for all
their volunteers); their log-ins are counted as everyone's.

Reset emails are counted per client address and per email address, whether or not an
account has the address.

The counters live in the default cache, which every web process shares (files under var/
for ``make run``, Redis in production). If the cache cannot be reached the request goes
through: a log-in must not fail because Redis is down.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from django.utils import timezone
from django_ratelimit.core import get_usage

from apps.volunteers.models import LoginLockout

logger = logging.getLogger(__name__)

Key = str | Callable[[str, HttpRequest], str]

LOCKOUT_KEEP = timedelta(days=90)


@dataclass(frozen=True, slots=True)
class LoginScope:
    """Whose log-ins (volunteers' or staff's) and the settings naming their rates."""

    name: str
    ip_rate: str
    ip_account_rate: str
    account_rate: str


VOLUNTEER = LoginScope(
    LoginLockout.Scope.VOLUNTEER,
    "COBBLESTONE_RATELIMIT_LOGIN_IP",
    "COBBLESTONE_RATELIMIT_LOGIN_IP_ACCOUNT",
    "COBBLESTONE_RATELIMIT_LOGIN_ACCOUNT",
)
STAFF = LoginScope(
    LoginLockout.Scope.STAFF,
    "COBBLESTONE_RATELIMIT_STAFF_LOGIN_IP",
    "COBBLESTONE_RATELIMIT_STAFF_LOGIN_IP_ACCOUNT",
    "COBBLESTONE_RATELIMIT_STAFF_LOGIN_ACCOUNT",
)


@dataclass(frozen=True, slots=True)
class _Limit:
    group: str
    kind: str  # a LoginLockout.Kind
    rate: str | None
    key: Key
    spares_known: bool  # a known client is not held back by it


def _usage(request: HttpRequest, *, group: str, rate: str | None, key: Key, count: bool) -> dict | None:
    """django-ratelimit's usage of ``group`` (counting this request if ``count``), or None."""
    if rate is None:
        return None
    try:
        return get_usage(request, group=group, key=key, rate=rate, increment=count)
    except Exception as exc:  # the cache is down or the client address unknown: do not limit
        logger.warning("rate limit %s not applied: %s: %s", group, type(exc).__name__, exc)
        return None


def _normalized(identity: str) -> str:
    return identity.strip().lower()


def _identity_key(identity: str) -> Callable[[str, HttpRequest], str]:
    normalized = _normalized(identity)
    return lambda group, request: normalized


def client_address(request: HttpRequest) -> str:
    """The address the limits count a request under (RATELIMIT_IP_META_KEY, else REMOTE_ADDR)."""
    return str(request.META.get(settings.RATELIMIT_IP_META_KEY or "REMOTE_ADDR", ""))


def _ip_identity_key(identity: str) -> Callable[[str, HttpRequest], str]:
    normalized = _normalized(identity)
    return lambda group, request: f"{client_address(request)}|{normalized}"


def _login_limits(scope: LoginScope, identity: str) -> tuple[_Limit, ...]:
    kinds = LoginLockout.Kind
    return (
        _Limit(f"{scope.name}-login-ip", kinds.ADDRESS, getattr(settings, scope.ip_rate), "ip", False),
        _Limit(
            f"{scope.name}-login-ip-account",
            kinds.ADDRESS_ACCOUNT,
            getattr(settings, scope.ip_account_rate),
            _ip_identity_key(identity),
            False,
        ),
        _Limit(
            f"{scope.name}-login-account",
            kinds.ACCOUNT,
            getattr(settings, scope.account_rate),
            _identity_key(identity),
            True,
        ),
    )


def _wait(usage: dict | None, *, reached: bool) -> int | None:
    if usage is None or not reached:
        return None
    return max(int(usage["time_left"]), 1)


def _known_key(scope: LoginScope, identity: str, request: HttpRequest) -> str:
    digest = hashlib.sha256(f"{_normalized(identity)}|{client_address(request)}".encode()).hexdigest()
    return f"cobblestone-known-client:{scope.name}:{digest}"


def _known(scope: LoginScope, identity: str, request: HttpRequest) -> bool:
    try:
        return bool(cache.get(_known_key(scope, identity, request)))
    except Exception as exc:
        logger.warning("known clients not read: %s: %s", type(exc).__name__, exc)
        return False


def login_wait(request: HttpRequest, identity: str, *, scope: LoginScope = VOLUNTEER) -> int | None:
    """Seconds before a log-in as ``identity`` from this client may be tried, or None if now."""
    known: bool | None = None
    for limit in _login_limits(scope, identity):
        if limit.spares_known:
            known = _known(scope, identity, request) if known is None else known
            if known:
                continue
        usage = _usage(request, group=limit.group, rate=limit.rate, key=limit.key, count=False)
        wait = _wait(usage, reached=usage is not None and usage["count"] >= usage["limit"])
        if wait is not None:
            return wait
    return None


def login_failed(request: HttpRequest, identity: str, *, scope: LoginScope = VOLUNTEER) -> None:
    """Count one failed log-in as ``identity`` from this client; a limit it reaches is
    logged and recorded."""
    for limit in _login_limits(scope, identity):
        usage = _usage(request, group=limit.group, rate=limit.rate, key=limit.key, count=True)
        if usage is not None and usage["count"] == usage["limit"]:
            _lockout_record(request, scope, limit, identity, seconds=int(usage["time_left"]))


def login_succeeded(request: HttpRequest, identity: str, *, scope: LoginScope = VOLUNTEER) -> None:
    """Remember this client's address as known to ``identity``'s account."""
    try:
        cache.set(
            _known_key(scope, identity, request), 1, timeout=settings.COBBLESTONE_KNOWN_CLIENT_DAYS * 86400
        )
    except Exception as exc:
        logger.warning("known client not recorded: %s: %s", type(exc).__name__, exc)


def _lockout_record(
    request: HttpRequest, scope: LoginScope, limit: _Limit, identity: str, *, seconds: int
) -> None:
    address = client_address(request) or None
    account = "" if limit.kind == LoginLockout.Kind.ADDRESS else _normalized(identity)[:254]
    logger.warning(
        "log-in limit reached: %s %s, account %r, address %s, for %d s",
        scope.name,
        limit.kind,
        account,
        address,
        seconds,
    )
    now = timezone.now()
    LoginLockout.objects.filter(time__lt=now - LOCKOUT_KEEP).delete()
    LoginLockout.objects.create(
        scope=scope.name,
        kind=limit.kind,
        account=account,
        address=address if limit.kind != LoginLockout.Kind.ACCOUNT else None,
        time=now,
        until=now + timedelta(seconds=max(seconds, 1)),
    )


def account_manager_address(request: HttpRequest) -> bool:
    """Whether the client is an account manager's server (COBBLESTONE_ACCOUNT_MANAGER_NETWORKS)."""
    try:
        address = ipaddress.ip_address(client_address(request))
    except ValueError:
        return False
    return any(
        address in ipaddress.ip_network(network, strict=False)
        for network in settings.COBBLESTONE_ACCOUNT_MANAGER_NETWORKS
    )


def signup_wait(request: HttpRequest) -> int | None:
    """Count an attempt to make an account; seconds to wait if there were too many, or None.
    An account manager's server makes accounts for all its volunteers: it is not limited."""
    if account_manager_address(request):
        return None
    usage = _usage(
        request, group="signup-ip", rate=settings.COBBLESTONE_RATELIMIT_SIGNUP_IP, key="ip", count=True
    )
    return _wait(usage, reached=usage is not None and bool(usage["should_limit"]))


def mail_ip_wait(request: HttpRequest) -> int | None:
    """Count a request for a reset email from this client; seconds to wait if there were too
    many, or None."""
    usage = _usage(
        request, group="mail-ip", rate=settings.COBBLESTONE_RATELIMIT_RESET_MAIL_IP, key="ip", count=True
    )
    return _wait(usage, reached=usage is not None and bool(usage["should_limit"]))


def mail_address_allowed(request: HttpRequest, email: str) -> bool:
    """Count a message to ``email`` (a reset link, a sign-up notice); False past the limit."""
    usage = _usage(
        request,
        group="mail-address",
        rate=settings.COBBLESTONE_RATELIMIT_RESET_MAIL_ADDRESS,
        key=_identity_key(email),
        count=True,
    )
    return usage is None or not usage["should_limit"]


def wait_text(seconds: int) -> str:
    """ "5 minutes", "1 minute", "40 seconds": how long, for people."""
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = round(seconds / 60)
    return f"{minutes} minutes"


def too_many_text(seconds: int) -> str:
    """What a refused log-in or password check says."""
    return f"Too many failed log-ins. Try again in {wait_text(seconds)}."
