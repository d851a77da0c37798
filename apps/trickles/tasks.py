"""Celery tasks of trickle messages: thin wrappers around the services."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from apps.core import clock
from apps.trickles.services import TrickleRetry, trickle_handle, trickles_lost
from boincproj.celery import beat_expires

MAX_RETRIES = 5


@shared_task(bind=True, name="trickles.handle", max_retries=MAX_RETRIES, time_limit=120, soft_time_limit=100)
def trickle_handle_task(self: Any, message_id: int) -> str:
    """Run the handler of one stored trickle-up; a failure is retried with a growing delay
    (10 s, 20 s, … 160 s), and the last one marks the message failed."""
    try:
        handled = trickle_handle(
            message_id=message_id, now=clock.now(), final=self.request.retries >= MAX_RETRIES
        )
    except TrickleRetry as exc:
        raise self.retry(exc=exc, countdown=10 * 2**self.request.retries) from exc
    return handled.state


@shared_task(
    name="trickles.sweep", expires=beat_expires("trickles.sweep"), time_limit=120, soft_time_limit=100
)
def trickles_sweep_task() -> int:
    """Queue again the trickle-ups whose handling task was lost; returns how many."""
    lost = trickles_lost(now=clock.now())
    for message_id in lost:
        trickle_handle_task.delay(message_id)
    return len(lost)
