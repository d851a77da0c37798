"""Celery tasks of the credit daemons: the feeder's normalization, the daily statistics and
the cross-project normalization.

Names match boincproj.celery.DEFAULT_SCHEDULE; the feeder and update_stats run one recorded
pass per project that has not paused it (DaemonRun names "feeder" and "update_stats"), the
cross-project normalization one pass over every project.
"""

from __future__ import annotations

import logging

from celery import shared_task

from apps.core import clock
from apps.credit.cross_project_services import DAEMON as CROSS_PROJECT_DAEMON
from apps.credit.cross_project_services import cross_project_normalize, cross_project_pass_locked
from apps.credit.services import UPDATE_STATS_DAEMON, credit_normalize_project, credit_update_stats
from apps.projects.services import daemon_pass_run, daemon_run_for_projects
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)


@shared_task(
    name="credit.normalize", expires=beat_expires("credit.normalize"), time_limit=600, soft_time_limit=540
)
def normalize_task() -> dict[str, int]:
    outcome = daemon_run_for_projects(daemon="feeder", run=lambda p: credit_normalize_project(project=p))
    logger.info("feeder: %d rows changed, %d errors", outcome.items, outcome.errors)
    return {"items": outcome.items, "errors": outcome.errors}


@shared_task(
    name="credit.update_stats",
    expires=beat_expires("credit.update_stats"),
    time_limit=3600,
    soft_time_limit=3540,
)
def update_stats_task() -> dict[str, int]:
    outcome = daemon_run_for_projects(
        daemon=UPDATE_STATS_DAEMON, run=lambda p: credit_update_stats(project=p, now=clock.now())
    )
    logger.info("update_stats: %d rows, %d errors", outcome.items, outcome.errors)
    return {"items": outcome.items, "errors": outcome.errors}


@shared_task(
    name="credit.cross_project",
    expires=beat_expires("credit.cross_project"),
    time_limit=900,
    soft_time_limit=840,
)
def cross_project_task() -> dict[str, int]:
    outcome = daemon_pass_run(
        project=None,
        daemon=CROSS_PROJECT_DAEMON,
        run=lambda: cross_project_pass_locked(lambda: cross_project_normalize(now=clock.now()).daemon_pass()),
    )
    logger.info("cross_project: %s", outcome.message)
    return {"items": outcome.items, "errors": outcome.errors}
