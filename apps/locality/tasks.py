"""Celery tasks of locality scheduling: thin wrappers around the services."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.core import clock
from apps.locality.services import locality_work_generate, working_sets_update
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)


@shared_task(
    name="locality.working_set",
    expires=beat_expires("locality.working_set"),
    time_limit=300,
    soft_time_limit=270,
)
def locality_working_set_task() -> int:
    """The locality working-set manager, one pass over every locality project."""
    passes = working_sets_update(now=clock.now())
    for p in passes:
        logger.info(
            "working set: %d/%d files, +%d -%d, %d no-work markers cleared, %d files found",
            len(p.working_set),
            p.target_size,
            len(p.added),
            len(p.removed),
            len(p.cleared_no_work),
            p.files_created,
        )
    return sum(p.changes for p in passes)


@shared_task(name="locality.generate_work", time_limit=120, soft_time_limit=100)
def locality_generate_work_task(file_id: int) -> int:
    """Answer a "need work for file X" signal with the project's on-demand generator.

    A failure leaves the signal pending; the scheduler re-sends it once it is stale.
    """
    outcome = locality_work_generate(file_id=file_id, now=clock.now())
    return outcome.created if outcome is not None else 0
