"""gunicorn's access log without the secrets BOINC clients send in query strings.

The client's web RPCs put an account key (``am_get_info.php?account_key=``), or the password
hash that logs in as well as a password (``lookup_account.php?passwd_hash=``), in the URL; an
access log that keeps them is a list of log-ins. This logger writes each such value as
``***`` in the request line, the query string and the referrer; the nginx site masks the same
names (deploy/nginx/cobblestone.conf).

    gunicorn --logger-class boincproj.access_log.AccessLogger   (deploy/gunicorn.conf.py sets it)
"""

from __future__ import annotations

import re
from typing import Any

from gunicorn.glogging import Logger

SECRET_PARAMETERS = ("account_key", "authenticator", "passwd_hash", "auth_str", "auth")
MASK = "***"
# A name as a form decodes it: any letter case, "_" also percent-encoded.
_NAMES = "|".join(name.replace("_", "(?:_|%5f)") for name in SECRET_PARAMETERS)
_SECRET = re.compile(rf"((?:^|[?&;])(?:{_NAMES})=)[^&;#\s\"]*", re.IGNORECASE)
# The atoms that carry the query string (or a URL with one).
_MASKED_ATOMS = ("r", "q", "f", "{referer}i")


def mask_secrets(text: str) -> str:
    """``text`` (a URL, a query string or a request line) with every secret parameter's value
    replaced by ``***``."""
    return _SECRET.sub(rf"\g<1>{MASK}", text)


class AccessLogger(Logger):
    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        for name in _MASKED_ATOMS:
            if isinstance(atoms.get(name), str):
                atoms[name] = mask_secrets(atoms[name])
        return atoms
