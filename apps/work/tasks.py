"""Celery tasks of the work daemons: each runs one recorded pass of one service per project.

Names match boincproj.celery.DEFAULT_SCHEDULE. A project pauses a daemon in the admin
(Project.paused_daemons); the pass skips it. Time limits stop a pass stuck on a slow
database; the pass's transactions roll back and the next beat tick starts over.
"""

from __future__ import annotations

import logging

from celery import shared_task

from apps.work.services.daemons import daemon_run
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)

TIME_LIMIT = 600
SOFT_TIME_LIMIT = 540


def daemon_task_run(name: str) -> dict[str, int]:
    """One recorded pass of the named daemon (apps.work.services.daemons) for every project."""
    outcome = daemon_run(name)
    logger.info("%s: %d items, %d errors", name, outcome.items, outcome.errors)
    return {"items": outcome.items, "errors": outcome.errors}


@shared_task(
    name="work.transition",
    expires=beat_expires("work.transition"),
    time_limit=TIME_LIMIT,
    soft_time_limit=SOFT_TIME_LIMIT,
)
def transition_task() -> dict[str, int]:
    return daemon_task_run("transitioner")


@shared_task(
    name="work.validate",
    expires=beat_expires("work.validate"),
    time_limit=TIME_LIMIT,
    soft_time_limit=SOFT_TIME_LIMIT,
)
def validate_task() -> dict[str, int]:
    return daemon_task_run("validator")


@shared_task(
    name="work.assimilate",
    expires=beat_expires("work.assimilate"),
    time_limit=TIME_LIMIT,
    soft_time_limit=SOFT_TIME_LIMIT,
)
def assimilate_task() -> dict[str, int]:
    return daemon_task_run("assimilator")


@shared_task(
    name="work.file_delete",
    expires=beat_expires("work.file_delete"),
    time_limit=TIME_LIMIT,
    soft_time_limit=SOFT_TIME_LIMIT,
)
def file_delete_task() -> dict[str, int]:
    return daemon_task_run("file_deleter")


@shared_task(
    name="work.purge",
    expires=beat_expires("work.purge"),
    time_limit=3 * TIME_LIMIT,
    soft_time_limit=3 * SOFT_TIME_LIMIT,
)
def purge_task() -> dict[str, int]:
    return daemon_task_run("db_purge")
