"""Celery task of account deletion: carry out deletions whose grace period has ended."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.account_deletion.services import account_deletions_due
from apps.core import clock
from apps.projects.services import daemon_run_for_projects
from boincproj.celery import beat_expires

logger = logging.getLogger(__name__)

DAEMON = "account_deletions"


@shared_task(
    name="account_deletion.due",
    expires=beat_expires("account_deletion.due"),
    time_limit=600,
    soft_time_limit=570,
)
def account_deletions_task() -> dict[str, int]:
    outcome = daemon_run_for_projects(
        daemon=DAEMON, run=lambda p: account_deletions_due(project=p, now=clock.now())
    )
    logger.info("account deletions: %d deleted, %d errors", outcome.items, outcome.errors)
    return {"items": outcome.items, "errors": outcome.errors}
