"""Targeted and broadcast jobs: BOINC's assignment table."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from apps.core import clock
from apps.core.choices import enum_choices
from apps.work.domain.assignments import TargetType


class Assignment(models.Model):
    """A workunit meant for one host, user or team, or broadcast (one result per host).

    ``target_id`` is the host's, account's or team's id as ``target_type`` says (0 for all
    hosts). Purging the workunit empties ``workunit`` (as for any row that refers to a purged
    one); the scheduler then drops the assignment, as BOINC's drops one whose workunit is gone.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    workunit = models.OneToOneField(
        "work.Workunit", null=True, blank=True, on_delete=models.SET_NULL, related_name="assignment"
    )
    target_type = models.PositiveSmallIntegerField(choices=enum_choices(TargetType))
    target_id = models.BigIntegerField(default=0, help_text="The host, account or team id; 0 for all hosts")
    multi = models.BooleanField(default=False, help_text="Broadcast: one result for each eligible host")
    create_time = models.DateTimeField(default=clock.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project", "target_type", "target_id"], name="assignment_target"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(target_type=int(TargetType.NONE), target_id=0, multi=True)
                | Q(
                    target_type__in=[int(t) for t in TargetType if t is not TargetType.NONE], target_id__gt=0
                ),
                name="assignment_target_valid",
            ),
        ]

    def __str__(self) -> str:
        kind = "broadcast" if self.multi else "targeted"
        return f"{kind} {TargetType(self.target_type).name.lower()} {self.target_id}: workunit {self.workunit_id}"
