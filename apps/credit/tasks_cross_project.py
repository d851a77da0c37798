"""The periodic task ``credit.cross_project`` (boincproj.celery.DEFAULT_SCHEDULE).

Celery's autodiscovery imports only ``<app>.tasks``; apps.portal.tasks imports this module
so the task is registered (apps.credit.tasks belongs to the feeder and update_stats).
"""

from __future__ import annotations

import logging

from celery import shared_task

from apps.core import clock
from apps.credit.cross_project_services import DAEMON, cross_project_normalize, cross_project_pass_locked
from apps.projects.services import daemon_pass_run
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)


@shared_task(
    name="credit.cross_project",
    expires=beat_expires("credit.cross_project"),
    time_limit=900,
    soft_time_limit=840,
)
def cross_project_task() -> dict[str, int]:
    outcome = daemon_pass_run(
        project=None,
        daemon=DAEMON,
        run=lambda: cross_project_pass_locked(lambda: cross_project_normalize(now=clock.now()).daemon_pass()),
    )
    logger.info("cross_project: %s", outcome.message)
    return {"items": outcome.items, "errors": outcome.errors}
