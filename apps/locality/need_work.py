"""The "need work for file X" signal of locality scheduling: a NeedWork row, the need_work/X trigger, and after
the commit the Celery task that runs the project's generator.

Apart from services.py because it enqueues that task, and the task module imports services.py
for the generation it runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

from django.db import IntegrityError, transaction

from apps.hosts.models import Host
from apps.locality.models import LocalityFile, NeedWork
from apps.locality.tasks import locality_generate_work_task
from apps.locality.triggers import Trigger, trigger_root, trigger_touch

# A pending signal older than this is assumed lost (worker down) and is enqueued again.
STALE_SIGNAL = timedelta(minutes=2)


def need_work_signal(*, file: LocalityFile, host: Host | None, now: datetime) -> bool:
    """The "need work for file X" signal: one pending NeedWork row per file, the
    need_work/X trigger, and (after commit) the project's generator task.

    Returns False when a recent signal for the file is still pending (the generator is on
    it). A pending signal older than ``STALE_SIGNAL`` is re-sent, in case its task was lost.
    """
    project = file.project
    with transaction.atomic():
        pending = NeedWork.objects.filter(file=file, handled_time__isnull=True).first()
        if pending is None:
            try:
                with transaction.atomic():
                    NeedWork.objects.create(file=file, requested_time=now, requested_by_host=host)
            except IntegrityError:
                return False  # a concurrent RPC signalled the same file first
        elif pending.requested_time < now - STALE_SIGNAL:
            NeedWork.objects.filter(id=pending.id).update(requested_time=now)
        else:
            return False
        if project.locality_work_generator:
            transaction.on_commit(partial(work_generation_enqueue, file.id), robust=True)
    trigger_touch(trigger_root(project), Trigger.NEED_WORK, file.name)
    return True


def work_generation_enqueue(file_id: int) -> None:
    """Boundary to Celery (tests replace it)."""
    locality_generate_work_task.delay(file_id)
