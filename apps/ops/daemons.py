"""BOINC's bin/start, bin/stop and bin/status for a Cobblestone server.

The daemons are Celery beat's periodic tasks; each pass skips the projects that paused it
(Project.paused_daemons). Stopping a project pauses its daemons and stops its scheduler,
which then answers "project is down" (BOINC's stop_daemons and stop_sched files); starting
undoes both. Naming daemons pauses or resumes only those and leaves the scheduler alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from django.db import transaction

from apps.portal.selectors import DAEMON_PERIODS, DaemonStatus, daemon_status_list
from apps.projects.models import Project
from apps.projects.services import project_daemons_set_paused
from boincproj.celery import DEFAULT_SCHEDULE
from boincproj.celery import app as celery_app

DAEMON_NAMES = tuple(entry.name for entry in DEFAULT_SCHEDULE)


class UnknownDaemon(ValueError):
    pass


def daemon_names_check(names: list[str]) -> None:
    unknown = sorted(set(names) - set(DAEMON_NAMES))
    if unknown:
        raise UnknownDaemon(
            f"unknown daemon(s) {', '.join(unknown)}; the daemons are {', '.join(DAEMON_NAMES)}"
        )


def projects_run_set(*, projects: list[Project], daemons: list[str], run: bool) -> None:
    """Start (``run``) or stop the named daemons, or with none named every daemon and the
    scheduler, of each project, in one transaction."""
    daemon_names_check(daemons)
    ids = [p.id for p in projects]
    with transaction.atomic():
        project_daemons_set_paused(project_ids=ids, daemons=daemons or list(DAEMON_NAMES), paused=not run)
        if not daemons:
            Project.objects.filter(id__in=ids).update(sched_stopped=not run)


@dataclass(frozen=True, slots=True)
class ProjectRunStatus:
    project: Project
    scheduler: str  # "running" or "disabled", as BOINC's status page says
    daemons: list[DaemonStatus]

    @property
    def healthy(self) -> bool:
        return all(d.state != "not running" for d in self.daemons)


def project_run_status(*, project: Project, now: datetime) -> ProjectRunStatus:
    daemons = [_state_for_project(d, project, now) for d in daemon_status_list(project=project, now=now)]
    return ProjectRunStatus(
        project=project, scheduler="disabled" if project.sched_stopped else "running", daemons=daemons
    )


def _state_for_project(status: DaemonStatus, project: Project, now: datetime) -> DaemonStatus:
    if status.name == "working_set" and not project.locality_scheduling:
        # The working set is kept for locality projects only; the others never record a pass.
        return replace(status, state="not used")
    if status.state == "not running" and status.last_run is None:
        # Beat runs each daemon one period after it starts: a daily one has not run yet on a
        # new project, and only a daemon overdue since the project was created is down.
        grace = max(3 * DAEMON_PERIODS[status.name], 120)
        if (now - project.create_time).total_seconds() <= grace:
            return replace(status, state="first pass due")
    return status


def celery_workers_answering(timeout: float = 2.0) -> list[str]:
    """Names of the Celery workers that answer a ping within ``timeout`` seconds."""
    try:
        replies = celery_app.control.ping(timeout=timeout)
    except Exception:
        return []
    return sorted(name for reply in replies for name in reply)  # type: ignore[union-attr]  # a list: ping waits for replies
