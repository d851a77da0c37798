"""The password hasher: bcrypt at the cost BOINC's own password_hash() uses.

Volunteers' passwords are checked on every lookup_account.php, create_account.php and web
log-in, none of which is rate limited; Django's default PBKDF2 (a million rounds) takes
about a second of CPU per check on a small server, so a few requests a second would
occupy it. bcrypt at cost 10 (PHP's default, which BOINC's web code uses) takes about
70 ms and is still a slow, salted hash.
"""

from __future__ import annotations

from django.contrib.auth.hashers import BCryptSHA256PasswordHasher


class BoincBCryptSHA256PasswordHasher(BCryptSHA256PasswordHasher):
    rounds = 10
