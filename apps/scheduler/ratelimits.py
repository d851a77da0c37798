"""Limits on guessing passwords and on making accounts (django-ratelimit's counters).

Failed log-ins are counted per client address and per email address: a wrong password or
an unknown email at ``lookup_account.php`` or the log-in form, and an email taken with
another password at ``create_account.php`` or the sign-up form (either would tell a
guesser when a password is right). Once a count reaches its limit, every log-in it covers
is refused until its window ends, the right password too; a success counts nothing, so a
volunteer who mistypes a few times is never held up. New accounts are counted per client
address, each attempt.

The counters live in the default cache, which every web process shares (files under var/
for ``make run``, Redis in production). If the cache cannot be reached the request goes
through: a log-in must not fail because Redis is down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest
from django_ratelimit.core import get_usage

logger = logging.getLogger(__name__)

Key = str | Callable[[str, HttpRequest], str]


def _usage(request: HttpRequest, *, group: str, rate: str | None, key: Key, count: bool) -> dict | None:
    """django-ratelimit's usage of ``group`` (counting this request if ``count``), or None."""
    if rate is None:
        return None
    try:
        return get_usage(request, group=group, key=key, rate=rate, increment=count)
    except Exception as exc:  # the cache is down or the client address unknown: do not limit
        logger.warning("rate limit %s not applied: %s: %s", group, type(exc).__name__, exc)
        return None


def _email_key(email: str) -> Callable[[str, HttpRequest], str]:
    normalized = email.strip().lower()
    return lambda group, request: normalized


def _login_limits(email: str) -> tuple[tuple[str, str | None, Key], ...]:
    return (
        ("login-ip", settings.COBBLESTONE_RATELIMIT_LOGIN_IP, "ip"),
        ("login-account", settings.COBBLESTONE_RATELIMIT_LOGIN_ACCOUNT, _email_key(email)),
    )


def _wait(usage: dict | None, *, reached: bool) -> int | None:
    if usage is None or not reached:
        return None
    return max(int(usage["time_left"]), 1)


def login_wait(request: HttpRequest, email: str) -> int | None:
    """Seconds before a log-in as ``email`` from this client may be tried, or None if now."""
    for group, rate, key in _login_limits(email):
        usage = _usage(request, group=group, rate=rate, key=key, count=False)
        wait = _wait(usage, reached=usage is not None and usage["count"] >= usage["limit"])
        if wait is not None:
            return wait
    return None


def login_failed(request: HttpRequest, email: str) -> None:
    """Count one failed log-in as ``email`` from this client."""
    for group, rate, key in _login_limits(email):
        _usage(request, group=group, rate=rate, key=key, count=True)


def signup_wait(request: HttpRequest) -> int | None:
    """Count an attempt to make an account; seconds to wait if there were too many, or None."""
    usage = _usage(
        request, group="signup-ip", rate=settings.COBBLESTONE_RATELIMIT_SIGNUP_IP, key="ip", count=True
    )
    return _wait(usage, reached=usage is not None and bool(usage["should_limit"]))


def wait_text(seconds: int) -> str:
    """ "5 minutes", "1 minute", "40 seconds": how long, for people."""
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = round(seconds / 60)
    return f"{minutes} minutes"
