"""Work sequences (docs/sequences.md): long computations kept on one host, step by step."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from apps.applications.domain.job_bounds import MAX_DELAY_BOUND
from apps.core.choices import enum_choices
from apps.work.domain.states import SequenceState
from apps.work.models import Workunit


class WorkSequence(models.Model):
    """The head record of a sequence W1…Wn of workunits.

    Holds the maximum result time, the links to the first workunit without a
    validated result and the first not yet dispatched to the assigned host, and the
    assignment itself.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="sequences")
    app = models.ForeignKey("applications.App", on_delete=models.PROTECT, related_name="sequences")
    name = models.CharField(max_length=254)
    create_time = models.DateTimeField(auto_now_add=True)
    state = models.PositiveSmallIntegerField(
        choices=enum_choices(SequenceState), default=SequenceState.UNASSIGNED
    )
    head_workunit = models.ForeignKey(
        "work.Workunit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    max_result_time = models.FloatField(
        validators=[MinValueValidator(1), MaxValueValidator(MAX_DELAY_BOUND)],
        help_text="Seconds of real time a host may take for one result",
    )
    first_unvalidated = models.ForeignKey(
        "work.Workunit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    first_undispatched = models.ForeignKey(
        "work.Workunit", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assigned_host = models.ForeignKey(
        "hosts.Host", null=True, blank=True, on_delete=models.SET_NULL, related_name="sequences"
    )
    assigned_time = models.DateTimeField(null=True, blank=True)
    restartable_every = models.PositiveIntegerField(
        default=0, help_text="Every k-th result uploads the full state (0 = only the last)"
    )
    expected_length = models.PositiveIntegerField(null=True, blank=True, help_text="Empty when open-ended")
    last_progress_time = models.DateTimeField(null=True, blank=True)
    replica_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="replicas",
        help_text="Redundancy: this chain replicates another and is compared with it",
    )
    ended_notified = models.BooleanField(default=False, help_text="The host has been told the sequence ended")
    checkpoint_result = models.ForeignKey(
        "work.Result",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The validated restartable result whose uploaded state a new host restarts from",
    )
    n_relocations = models.PositiveIntegerField(
        default=0, help_text="Times the sequence moved to another host"
    )
    relocated_from = models.ForeignKey(
        "hosts.Host",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The host it was last taken from; for one delay bound it goes to another host",
    )
    relocated_time = models.DateTimeField(null=True, blank=True, help_text="When it was last relocated")
    n_disagreements = models.PositiveIntegerField(
        default=0, help_text="Times its replica chains disagreed at a checkpoint and restarted"
    )
    error_reason = models.CharField(max_length=500, blank=True, help_text="Why the sequence is in ERROR")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="sequence_unique_name")]
        indexes = [models.Index(fields=["project", "state"], name="sequence_state")]

    def __str__(self) -> str:
        return self.name

    @property
    def workunits(self) -> models.QuerySet[Workunit]:
        """Its steps: the workunits whose ``sequence_id`` is this sequence's (work holds the id
        as a plain column, since it sits below this app)."""
        return Workunit.objects.filter(sequence_id=self.pk)
