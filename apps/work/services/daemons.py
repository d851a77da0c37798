"""The back-end daemons in the order one round runs them, for ``run_daemons`` and the tasks.

Each daemon is one service taking ``(project, now, limit)`` and returning a DaemonPass; the
Celery tasks and ``run_daemons`` run it for every project that has not paused it and record a
DaemonRun under the name the status page uses (apps.portal.selectors.DAEMON_PERIODS).

Apps built on work add their daemons to the round with ``daemon_register`` from their
AppConfig.ready() (work, below them in the import layers, never imports them): the sequences
app adds sequence_deadlines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from apps.core import clock
from apps.credit.services import credit_normalize_project
from apps.projects.models import Project
from apps.projects.services import DaemonPass, daemon_run_for_projects
from apps.work.services.assimilator import workunits_assimilate
from apps.work.services.dead_rows import dead_rows_purge
from apps.work.services.file_deleter import files_delete
from apps.work.services.purge import workunits_purge
from apps.work.services.transitioner import workunits_transition
from apps.work.services.validator import workunits_validate


@dataclass(frozen=True, slots=True)
class PassOptions:
    """Knobs of one pass: rows per daemon (default COBBLESTONE_DAEMON_BATCH), purge age override."""

    limit: int | None = None
    purge_min_age_days: float | None = None

    @property
    def batch(self) -> int:
        return self.limit or settings.COBBLESTONE_DAEMON_BATCH


ProjectDaemon = Callable[[Project, datetime, PassOptions], DaemonPass]


def _transitioner(p: Project, now: datetime, o: PassOptions) -> DaemonPass:
    return workunits_transition(project=p, now=now, limit=o.batch)


def _validator(p: Project, now: datetime, o: PassOptions) -> DaemonPass:
    return workunits_validate(project=p, now=now, limit=o.batch)


def _assimilator(p: Project, now: datetime, o: PassOptions) -> DaemonPass:
    return workunits_assimilate(project=p, now=now, limit=o.batch)


def _file_deleter(p: Project, now: datetime, o: PassOptions) -> DaemonPass:
    return files_delete(project=p, now=now, limit=o.batch)


def _purge(p: Project, now: datetime, o: PassOptions) -> DaemonPass:
    done = workunits_purge(project=p, now=now, limit=o.batch, min_age_days=o.purge_min_age_days)
    removed = dead_rows_purge(project=p, now=now, limit=o.batch)
    return (
        done + DaemonPass(items=removed, message=f"{removed} idle hosts and accounts archived")
        if removed
        else done
    )


def _feeder(p: Project, now: datetime, o: PassOptions) -> DaemonPass:
    return credit_normalize_project(project=p)


@dataclass(frozen=True, slots=True)
class Daemon:
    name: str  # as in DAEMON_PERIODS and Project.paused_daemons
    run: ProjectDaemon


# One round, in BOINC's pipeline order: each daemon's output is the next one's input. The
# registered daemons of other apps follow.
DAEMONS: list[Daemon] = [
    Daemon("transitioner", _transitioner),
    Daemon("validator", _validator),
    Daemon("assimilator", _assimilator),
    Daemon("file_deleter", _file_deleter),
    Daemon("db_purge", _purge),
    Daemon("feeder", _feeder),
]
DAEMONS_BY_NAME = {d.name: d for d in DAEMONS}


def daemon_register(daemon: Daemon) -> None:
    """Add another app's daemon to the end of the round (once: ready() may run again)."""
    if daemon.name not in DAEMONS_BY_NAME:
        DAEMONS.append(daemon)
        DAEMONS_BY_NAME[daemon.name] = daemon


def daemon_run(name: str, *, slug: str | None = None, options: PassOptions | None = None) -> DaemonPass:
    """One recorded pass of the named daemon for every project that has not paused it."""
    daemon = DAEMONS_BY_NAME[name]
    opts = options or PassOptions()
    return daemon_run_for_projects(daemon=name, slug=slug, run=lambda p: daemon.run(p, clock.now(), opts))


def daemons_round(*, slug: str | None = None, options: PassOptions | None = None) -> dict[str, DaemonPass]:
    """Every daemon once, in order."""
    return {d.name: daemon_run(d.name, slug=slug, options=options) for d in DAEMONS}
