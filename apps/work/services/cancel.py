"""Cancelling jobs (BOINC's cancel_jobs): the workunit errors out, hosts abort its results."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F

from apps.core import clock
from apps.work.domain.states import ErrorMask, Outcome, ServerState
from apps.work.models import Result, Workunit


def workunit_cancel(*, workunit_ids: list[int], now: datetime | None = None) -> int:
    """Mark workunits cancelled and withdraw their unsent results.

    Results in progress stay so: the scheduler tells their hosts to abort them on
    the next RPC (result_abort), and the transitioner finishes the workunit.
    """
    now = now or clock.now()
    with transaction.atomic():
        rows = Workunit.objects.filter(id__in=workunit_ids).values_list("id", "error_mask")
        ids = [wu_id for wu_id, mask in rows if not mask & ErrorMask.CANCELLED]
        Workunit.objects.filter(id__in=ids).update(
            error_mask=F("error_mask").bitor(int(ErrorMask.CANCELLED)), transition_time=now
        )
        Result.objects.filter(workunit_id__in=ids, server_state=ServerState.UNSENT).update(
            server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED
        )
    return len(ids)


def workunit_cancel_batch(*, project_id: int, batch: int, now: datetime | None = None) -> int:
    ids = list(Workunit.objects.filter(project_id=project_id, batch=batch).values_list("id", flat=True))
    return workunit_cancel(workunit_ids=ids, now=now)
