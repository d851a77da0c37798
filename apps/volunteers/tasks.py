"""Celery task of the volunteers app: the badge pass (BOINC's badge_assign)."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.core import clock
from apps.projects.models import Project
from apps.projects.services import DaemonPass, daemon_run_for_projects
from apps.volunteers.services.badges import badges_assign
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)

DAEMON = "badges"


def _run(project: Project) -> DaemonPass:
    done = badges_assign(project=project, now=clock.now())
    return DaemonPass(items=done.given + done.taken, message=f"{done.given} given, {done.taken} taken back")


@shared_task(
    name="volunteers.badges", expires=beat_expires("volunteers.badges"), time_limit=3600, soft_time_limit=3540
)
def badges_task() -> dict[str, int]:
    outcome = daemon_run_for_projects(daemon=DAEMON, run=_run)
    logger.info("badges: %d changed, %d errors", outcome.items, outcome.errors)
    return {"items": outcome.items, "errors": outcome.errors}
