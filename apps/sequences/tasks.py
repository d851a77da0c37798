"""Celery task of the sequence-deadline daemon: one recorded pass per project, as the work daemons.

Its name is in the work daemons' namespace, ``work.sequence_deadlines``, since it runs in their
round; the beat schedules stored in the database (django-celery-beat) call it by that name.
"""

from __future__ import annotations

from celery import shared_task

from apps.work.tasks import SOFT_TIME_LIMIT, TIME_LIMIT, daemon_task_run
from boincproj.celery import beat_expires


@shared_task(
    name="work.sequence_deadlines",
    expires=beat_expires("work.sequence_deadlines"),
    time_limit=TIME_LIMIT,
    soft_time_limit=SOFT_TIME_LIMIT,
)
def sequence_deadlines_task() -> dict[str, int]:
    return daemon_task_run("sequence_deadlines")
