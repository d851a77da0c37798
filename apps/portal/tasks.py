"""Celery tasks of the portal: the db_dump statistics export (``portal.stats_export``)."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.core import clock
from apps.portal.stats_export import DAEMON, stats_export_write
from apps.projects.services import daemon_run_for_projects
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)


@shared_task(
    name="portal.stats_export",
    expires=beat_expires("portal.stats_export"),
    time_limit=3600,
    soft_time_limit=3540,
)
def stats_export_task() -> dict[str, int]:
    outcome = daemon_run_for_projects(
        daemon=DAEMON, run=lambda p: stats_export_write(project=p, now=clock.now())
    )
    logger.info("db_dump: %d rows, %d errors", outcome.items, outcome.errors)
    return {"items": outcome.items, "errors": outcome.errors}
