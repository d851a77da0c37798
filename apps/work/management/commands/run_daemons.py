"""Run the back-end daemons from the command line: once (for tests and cron) or in a loop.

Each round runs, in order: transitioner, validator, assimilator, file_deleter, db_purge,
feeder (credit normalization) and sequence_deadlines, one bounded pass each per project that
has not paused it, recorded as DaemonRuns like the Celery tasks' passes.

``--once`` repeats rounds until one changes nothing (at most ``--max-rounds``), since each
daemon feeds the next (a report needs the transitioner, then the validator, the assimilator,
the transitioner again for file deletion, then the file deleter). Running it again right
after therefore changes nothing. ``--max-rounds 1`` runs exactly one round. Without
``--once`` it runs rounds forever, sleeping ``--sleep`` seconds after a quiet round.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.services.daemons import DAEMONS, PassOptions, daemon_run, daemons_round


class Command(BaseCommand):
    help = (
        "Run the transitioner, validator, assimilator, file deleter, db_purge, feeder and sequence deadlines."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--once", action="store_true", help="Run until nothing changes, then exit")
        parser.add_argument("--project", metavar="SLUG", help="Only this project")
        parser.add_argument(
            "--limit", type=int, default=None, help="Rows per daemon pass (COBBLESTONE_DAEMON_BATCH)"
        )
        parser.add_argument(
            "--max-rounds", type=int, default=20, help="With --once: at most this many rounds"
        )
        parser.add_argument(
            "--sleep", type=float, default=5.0, help="Without --once: seconds after a quiet round"
        )
        parser.add_argument(
            "--purge-min-age-days", type=float, default=None, help="Override Project.purge_min_age_days"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        slug = opts["project"]
        if slug and not Project.objects.filter(slug=slug).exists():
            raise CommandError(f"no project {slug!r}")
        options = PassOptions(limit=opts["limit"], purge_min_age_days=opts["purge_min_age_days"])
        if opts["once"]:
            self._once(slug, options, max(1, opts["max_rounds"]))
            return
        try:
            while True:
                totals = daemons_round(slug=slug, options=options)
                if not any(p.items for p in totals.values()):
                    time.sleep(opts["sleep"])
        except KeyboardInterrupt:
            self.stdout.write("Stopped.")

    def _once(self, slug: str | None, options: PassOptions, max_rounds: int) -> None:
        totals = {d.name: DaemonPass() for d in DAEMONS}
        seconds = dict.fromkeys(totals, 0.0)
        rounds = 0
        while rounds < max_rounds:
            rounds += 1
            round_items = 0
            for daemon in DAEMONS:
                t0 = time.monotonic()
                outcome = daemon_run(daemon.name, slug=slug, options=options)
                seconds[daemon.name] += time.monotonic() - t0
                totals[daemon.name] += outcome
                round_items += outcome.items
            if not round_items:
                break
        self._table(totals, seconds, rounds)

    def _table(self, totals: dict[str, DaemonPass], seconds: dict[str, float], rounds: int) -> None:
        self.stdout.write(f"{'daemon':<20}{'items':>8}{'errors':>8}{'seconds':>10}")
        for name, outcome in totals.items():
            self.stdout.write(f"{name:<20}{outcome.items:>8}{outcome.errors:>8}{seconds[name]:>10.2f}")
        self.stdout.write(f"rounds: {rounds}")
        for name, outcome in totals.items():
            if outcome.errors and outcome.message:
                self.stderr.write(f"{name}: {outcome.message[:500]}")
