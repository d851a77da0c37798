"""The Celery application: tasks come from each app's tasks.py, settings from CELERY_*."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "boincproj.settings")
# Celery takes the result backend from the environment's CELERY_RESULT_BACKEND before any
# setting (celery.app.utils.Settings.result_backend). Where the environment file says
# "django-db", as deploy/cobblestone.env.example does, the worker would use
# django-celery-results' own backend, whose writes from the worker's main process fail for
# good after a database restart, instead of the one the settings choose for "django-db"
# (boincproj.results, which reconnects): the environment names that class too.
if os.environ.get("CELERY_RESULT_BACKEND") == "django-db":
    os.environ["CELERY_RESULT_BACKEND"] = "boincproj.results:DatabaseBackend"

app = Celery("boincproj")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _connections_checked(task: Any = None, **kwargs: Any) -> None:
    """Around each task, what Django does around each request: drop a connection that failed
    or is too old, and have the next use of a kept one check it first (CONN_HEALTH_CHECKS),
    so a connection a database restart broke is replaced instead of failing every task.
    Not for a task run inline (eager), which may be inside its caller's transaction."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


def ensure_broker_dirs() -> None:
    """The filesystem transport needs its folders before the first message."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True, slots=True)
class ScheduleEntry:
    name: str
    task: str
    every_seconds: int
    description: str


# The default beat schedule, installed into django-celery-beat by `setup_periodic_tasks`
# so admins see every periodic task in the admin and can pause or re-time it.
DEFAULT_SCHEDULE: tuple[ScheduleEntry, ...] = (
    ScheduleEntry("transitioner", "work.transition", 10, "Create and time out results; flag validation."),
    ScheduleEntry("validator", "work.validate", 10, "Compare results, choose canonical, grant credit."),
    ScheduleEntry("assimilator", "work.assimilate", 15, "Hand canonical outputs to the project's hook."),
    ScheduleEntry("file_deleter", "work.file_delete", 60, "Delete files of finished workunits."),
    ScheduleEntry("db_purge", "work.purge", 3600, "Archive then delete old finished rows."),
    ScheduleEntry("feeder", "credit.normalize", 600, "Normalize: recompute pfc_scale and min_avg_pfc."),
    ScheduleEntry("sequence_deadlines", "work.sequence_deadlines", 300, "Relocate late work sequences."),
    ScheduleEntry("batches", "submit.batches", 60, "Batch progress; expire batches; delete retired outputs."),
    ScheduleEntry("working_set", "locality.working_set", 60, "Maintain the locality working set."),
    ScheduleEntry(
        "update_stats", "credit.update_stats", 86400, "Decay recent average credit; daily history."
    ),
    ScheduleEntry("cross_project", "credit.cross_project", 86400, "Cross-project scale per plan class."),
    ScheduleEntry("db_dump", "portal.stats_export", 86400, "Write the stats export files."),
    ScheduleEntry(
        "trickle_sweep", "trickles.sweep", 300, "Queue again trickle-ups whose handling task was lost."
    ),
    ScheduleEntry("badges", "volunteers.badges", 86400, "Give and take back user and team badges."),
    ScheduleEntry(
        "account_deletions", "account_deletion.due", 3600, "Delete accounts whose grace period has ended."
    ),
)


# A tick still queued when the next one is sent is dropped by the worker (Celery's message
# expiry): during a backlog a pass outlasts its interval, and without this the queued ticks
# of the 10-second daemons pile up without bound in front of every other task. At least a
# minute, so clock skew between beat and the workers never drops every tick.
MIN_EXPIRES_SECONDS = 60


def beat_expires(task: str) -> int:
    """Seconds a beat-sent message of ``task`` may wait in the queue before it is dropped."""
    every = min((e.every_seconds for e in DEFAULT_SCHEDULE if e.task == task), default=0)
    return max(every, MIN_EXPIRES_SECONDS)
