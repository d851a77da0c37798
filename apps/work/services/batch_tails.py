"""Hurrying the tails of batches (the rule: domain/batch_tails.py), once per transitioner pass."""

from __future__ import annotations

from django.db.models import Count, Q

from apps.projects.models import Project
from apps.work.domain.batch_tails import batch_tail
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit


def batch_tails_accelerate(*, project: Project) -> int:
    """Raise the unsent results (and workunits) of batches in their tail to the project's
    ``reliable_on_priority``; returns the results raised. Off unless both
    ``batch_accel_fraction`` and ``reliable_on_priority`` are set.

    Only batches with an unsent result below that priority are counted, so a pass with
    nothing to raise costs one query.
    """
    fraction, priority = project.batch_accel_fraction, project.reliable_on_priority
    if fraction <= 0 or priority <= 0:
        return 0
    waiting = (
        Result.objects.filter(
            project=project, server_state=ServerState.UNSENT, priority__lt=priority, workunit__batch__gt=0
        )
        .values_list("workunit__batch", flat=True)
        .distinct()
    )
    unfinished = Q(canonical_result__isnull=True, error_mask=0)
    counts = (
        Workunit.objects.filter(project=project, batch__in=list(waiting))
        .values("batch")
        .annotate(total=Count("id"), unfinished=Count("id", filter=unfinished))
    )
    tails = [
        row["batch"]
        for row in counts
        if batch_tail(unfinished=row["unfinished"], total=row["total"], fraction=fraction)
    ]
    if not tails:
        return 0
    Workunit.objects.filter(unfinished, project=project, batch__in=tails, priority__lt=priority).update(
        priority=priority
    )
    return Result.objects.filter(
        project=project, server_state=ServerState.UNSENT, priority__lt=priority, workunit__batch__in=tails
    ).update(priority=priority)
