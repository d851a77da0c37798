"""Celery task of the batches daemon: one recorded pass per project, as the work daemons."""

from __future__ import annotations

from celery import shared_task

from apps.work.tasks import SOFT_TIME_LIMIT, TIME_LIMIT, daemon_task_run
from boincproj.celery import beat_expires


@shared_task(
    name="submit.batches",
    expires=beat_expires("submit.batches"),
    time_limit=TIME_LIMIT,
    soft_time_limit=SOFT_TIME_LIMIT,
)
def batches_task() -> dict[str, int]:
    return daemon_task_run("batches")
