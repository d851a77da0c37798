"""Weak account keys: ``<userid>_<md5(authenticator + stored password hash)>``.

A weak key attaches a computer to an account (the scheduler accepts it as the request's
authenticator) but logs in nowhere and changes nothing. It is derived from the stored
password hash, so it changes when the password (or the email address, which the client's
hash includes) changes, and every computer attached with the old key must be attached again.
"""

from __future__ import annotations

import hashlib
import re
import secrets

_WEAK_KEY = re.compile(r"([0-9]{1,18})_([0-9a-f]{32})")


def weak_key(*, userid: int, authenticator: str, passwd_hash: str) -> str:
    """The account's weak key, as BOINC's weak_auth() makes it."""
    digest = hashlib.md5((authenticator + passwd_hash).encode()).hexdigest()
    return f"{userid}_{digest}"


def weak_key_userid(key: str) -> int | None:
    """The account id a weak key names, or None if ``key`` is not shaped like one."""
    match = _WEAK_KEY.fullmatch(key.strip().lower())
    return int(match.group(1)) if match else None


def weak_key_matches(key: str, *, userid: int, authenticator: str, passwd_hash: str) -> bool:
    expected = weak_key(userid=userid, authenticator=authenticator, passwd_hash=passwd_hash)
    return secrets.compare_digest(key.strip().lower().encode(), expected.encode())
