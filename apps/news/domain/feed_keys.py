"""The key of an account's personal news feed (notices.php?userid=&auth=).

``<userid>_<md5(authenticator + stored password hash + "notify_rss")>``, as BOINC makes it:
it reads the account's notices and nothing else, and changes with the account key or
password, after which the scheduler advertises the new feed address.
"""

from __future__ import annotations

import hashlib
import secrets


def feed_key(*, userid: int, authenticator: str, passwd_hash: str) -> str:
    digest = hashlib.md5((authenticator + passwd_hash + "notify_rss").encode()).hexdigest()
    return f"{userid}_{digest}"


def feed_key_matches(key: str, *, userid: int, authenticator: str, passwd_hash: str) -> bool:
    expected = feed_key(userid=userid, authenticator=authenticator, passwd_hash=passwd_hash)
    return secrets.compare_digest(key.strip().lower().encode(), expected.encode())
