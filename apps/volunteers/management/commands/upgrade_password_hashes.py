"""Re-hash every account that still stores the bare md5 a client sends as its password.

Such a row (BOINC's unsalted md5(password + lower(email))) is a login for anyone who can
read it, until its volunteer logs in again and Account.check_passwd_hash re-hashes it. The
stored md5 is exactly what the salted scheme hashes, so the row can be upgraded now, without
the volunteer: new = make_passwd_hash(old). A pass:

1. reads the next batch of legacy rows in id order (each row is read once);
2. hashes them outside any transaction: the slow hash must not hold SQLite's write lock;
3. writes them in one transaction per batch, each with a conditional UPDATE that applies
   only while the row still holds the md5 read in step 1, so a log-in or password change
   in between is never overwritten (the row is counted as skipped).

Running it again upgrades nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.volunteers.services import account_passwd_hashes_upgrade


class Command(BaseCommand):
    help = "Re-hash accounts that still store the bare md5(password + email) as their password hash."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--batch-size", type=int, default=100, help="Accounts per transaction")
        parser.add_argument("--limit", type=int, default=None, help="At most this many accounts")
        parser.add_argument("--dry-run", action="store_true", help="Count the accounts; write nothing")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1")
        if opts["limit"] is not None and opts["limit"] < 1:
            raise CommandError("--limit must be at least 1")
        outcome = account_passwd_hashes_upgrade(
            batch_size=opts["batch_size"], limit=opts["limit"], dry_run=opts["dry_run"]
        )
        self.stdout.write(f"{'examined':>10}{'upgraded':>10}{'skipped':>10}{'seconds':>10}{'hashes/s':>10}")
        self.stdout.write(
            f"{outcome.examined:>10}{outcome.upgraded:>10}{outcome.skipped:>10}"
            f"{outcome.seconds:>10.2f}{outcome.hashes_per_second:>10.1f}"
        )
        if opts["dry_run"]:
            self.stdout.write("Dry run: nothing was written.")
