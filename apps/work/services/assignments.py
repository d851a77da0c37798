"""Targeted and broadcast jobs: checking their targets and writing their assignment rows."""

from __future__ import annotations

from collections.abc import Sequence

from django.dispatch import Signal

from apps.hosts.models import Host
from apps.projects.models import Project
from apps.volunteers.models import Account, Team
from apps.work.domain.assignments import Target, TargetType
from apps.work.domain.transitions import TRANSITION_FLAG_NO_NEW_RESULTS, TRANSITION_FLAG_NONE
from apps.work.models import Assignment, Workunit

# Sent after assignment rows were written in bulk (no post_save): the scheduler's cached
# "this project has assignments" must be read again.
assignments_created = Signal()

_TARGET_MODELS: dict[TargetType, type[Host] | type[Account] | type[Team]] = {
    TargetType.HOST: Host,
    TargetType.USER: Account,
    TargetType.TEAM: Team,
}
_TARGET_NOUNS = {TargetType.HOST: "host", TargetType.USER: "user (account)", TargetType.TEAM: "team"}


def transitioner_flags_for(target: Target) -> int:
    """A targeted job's results are made by the scheduler for its target, a broadcast's for
    each host: the transitioner makes none (and leaves a broadcast job alone altogether)."""
    return TRANSITION_FLAG_NONE if target.multi else TRANSITION_FLAG_NO_NEW_RESULTS


def targets_missing(project: Project, targets: Sequence[Target]) -> str | None:
    """Why some target is not a host, account or team of ``project``, or None."""
    wanted: dict[TargetType, set[int]] = {}
    for target in targets:
        if target.type is not TargetType.NONE:
            wanted.setdefault(target.type, set()).add(target.id)
    for kind, ids in sorted(wanted.items()):
        found = set(
            _TARGET_MODELS[kind].objects.filter(project=project, id__in=ids).values_list("id", flat=True)
        )
        missing = sorted(ids - found)
        if missing:
            return f"no {_TARGET_NOUNS[kind]} with id {missing[0]} in project {project.slug}"
    return None


def assignments_create(*, project: Project, jobs: Sequence[tuple[Workunit, Target]]) -> None:
    """One assignment row per targeted or broadcast workunit (in the caller's transaction)."""
    if not jobs:
        return
    Assignment.objects.bulk_create(
        Assignment(
            project=project,
            workunit=wu,
            target_type=int(target.type),
            target_id=target.id,
            multi=target.multi,
            create_time=wu.create_time,
        )
        for wu, target in jobs
    )
    assignments_created.send(sender=Assignment, project_id=project.id)
