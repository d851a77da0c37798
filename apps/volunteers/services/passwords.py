"""The batch upgrade of legacy password rows."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from apps.volunteers.models import LEGACY_PASSWD_HASH, Account, make_passwd_hash

# The same predicate as Account.check_passwd_hash, anchored for the database (a prefilter:
# SQLite's REGEXP lets "$" match before a final newline, so rows are checked again in Python).
LEGACY_PASSWD_HASH_SQL = f"^{LEGACY_PASSWD_HASH.pattern}$"


@dataclass(frozen=True, slots=True)
class PasswdHashUpgrade:
    """What a pass did: legacy rows found, rows re-hashed, rows changed meanwhile."""

    examined: int
    upgraded: int
    skipped: int
    hashed: int
    seconds: float

    @property
    def hashes_per_second(self) -> float:
        return self.hashed / self.seconds if self.seconds > 0 else 0.0


def account_passwd_hash_upgrade_batch(rows: Sequence[tuple[int, str]]) -> int:
    """Store make_passwd_hash(md5) for each (account id, md5) whose row still holds that md5.

    Returns the number of rows written."""
    hashed = [(pk, old, make_passwd_hash(old)) for pk, old in rows]
    with transaction.atomic():
        return sum(
            Account.objects.filter(pk=pk, passwd_hash=old).update(passwd_hash=new) for pk, old, new in hashed
        )


def account_passwd_hashes_upgrade(
    *, batch_size: int = 100, limit: int | None = None, dry_run: bool = False
) -> PasswdHashUpgrade:
    """Re-hash the legacy md5 rows, ``batch_size`` per transaction, at most ``limit`` rows;
    ``dry_run`` only counts them."""
    started = time.monotonic()
    examined = upgraded = 0
    after_id = 0
    while limit is None or examined < limit:
        size = batch_size if limit is None else min(batch_size, limit - examined)
        page = list(
            Account.objects.filter(id__gt=after_id, passwd_hash__regex=LEGACY_PASSWD_HASH_SQL)
            .order_by("id")
            .values_list("id", "passwd_hash")[:size]
        )
        if not page:
            break
        after_id = page[-1][0]
        batch = [(pk, old) for pk, old in page if LEGACY_PASSWD_HASH.fullmatch(old)]
        examined += len(batch)
        if not dry_run:
            upgraded += account_passwd_hash_upgrade_batch(batch)
    hashed = 0 if dry_run else examined
    return PasswdHashUpgrade(
        examined=examined,
        upgraded=upgraded,
        skipped=hashed - upgraded,
        hashed=hashed,
        seconds=time.monotonic() - started,
    )
