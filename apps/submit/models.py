"""Batches of jobs with an owner, and who may submit them (BOINC's batch, user_submit,
user_submit_app, job_file and batch_file_assoc tables).

A workunit belongs to a batch through its integer ``Workunit.batch``, which holds the
batch's id as in BOINC; 0 is no batch. The work app, below this one, never needs the table.
"""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

from apps.core import clock
from apps.core.choices import enum_choices
from apps.submit.domain.states import BatchState


class Batch(models.Model):
    """A set of jobs submitted together by one submitter for one app."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="batches")
    owner = models.ForeignKey("volunteers.Account", on_delete=models.PROTECT, related_name="batches")
    app = models.ForeignKey("applications.App", on_delete=models.PROTECT, related_name="batches")
    name = models.CharField(max_length=254)
    description = models.TextField(blank=True)
    state = models.PositiveSmallIntegerField(choices=enum_choices(BatchState), default=BatchState.INIT)
    create_time = models.DateTimeField(default=clock.now)
    completion_time = models.DateTimeField(null=True, blank=True)
    expire_time = models.DateTimeField(
        null=True, blank=True, help_text="Aborted and retired after this time; empty = never"
    )
    # The submitter's fair-share clock (Unix seconds) when the batch's jobs were queued:
    # its jobs run in the order of their logical end times among all submitters' jobs.
    logical_start_time = models.FloatField(default=0)
    logical_end_time = models.FloatField(default=0)
    est_completion_time = models.DateTimeField(null=True, blank=True)
    njobs = models.PositiveIntegerField(default=0)
    njobs_success = models.PositiveIntegerField(default=0, help_text="Jobs with a canonical result")
    nerror_jobs = models.PositiveIntegerField(default=0, help_text="Jobs that errored out")
    njobs_in_progress = models.PositiveIntegerField(default=0, help_text="Jobs with a task on a host")
    fraction_done = models.FloatField(default=0, validators=[MinValueValidator(0)])
    credit_estimate = models.FloatField(default=0)
    credit_canonical = models.FloatField(default=0, help_text="Credit granted to the canonical results")
    files_deleted = models.BooleanField(
        default=False, help_text="The file deleter removed its outputs (retired or expired)"
    )

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "batches"
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="batch_unique_name")]
        indexes = [
            models.Index(fields=["owner", "state"], name="batch_owner_state"),
            models.Index(fields=["project", "state"], name="batch_project_state"),
            models.Index(
                fields=["expire_time"], condition=Q(expire_time__isnull=False), name="batch_expiring"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def batch_state(self) -> BatchState:
        return BatchState(self.state)


class UserSubmit(models.Model):
    """A submitter: the accounts that may submit jobs, with their share of the project."""

    account = models.OneToOneField("volunteers.Account", on_delete=models.CASCADE, related_name="submitter")
    quota = models.FloatField(
        default=1, validators=[MinValueValidator(0)], help_text="Share of the hosts relative to the others"
    )
    logical_start_time = models.FloatField(
        default=0, help_text="Fair-share clock (Unix seconds): where this submitter's next job starts"
    )
    submit_all = models.BooleanField(default=False, help_text="May submit to every app")
    manage_all = models.BooleanField(default=False, help_text="May manage every app's batches")
    max_jobs_in_progress = models.PositiveIntegerField(default=0, help_text="0 = no limit")

    class Meta:
        ordering = ["account_id"]
        verbose_name = "submitter"

    def __str__(self) -> str:
        return f"submitter {self.account_id}"


class UserSubmitApp(models.Model):
    """A submitter's permission for one app (needed unless it may submit to every app)."""

    account = models.ForeignKey("volunteers.Account", on_delete=models.CASCADE, related_name="submit_apps")
    app = models.ForeignKey("applications.App", on_delete=models.CASCADE, related_name="submitters")
    manage = models.BooleanField(default=False, help_text="May manage the app's batches")

    class Meta:
        ordering = ["account_id", "app_id"]
        verbose_name = "submitter's app"
        constraints = [models.UniqueConstraint(fields=["account", "app"], name="usersubmitapp_unique")]

    def __str__(self) -> str:
        return f"{self.account_id}:{self.app_id}"


class JobFile(models.Model):
    """An input file a submitter uploaded (content-addressed: ``jf_<md5>``), kept until its
    delete time and while a batch that is not retired holds it."""

    # Emptied when db_purge removes the input file (its file is gone by then); the batches
    # daemon then deletes the row.
    input_file = models.OneToOneField(
        "work.InputFile", null=True, on_delete=models.SET_NULL, related_name="job_file"
    )
    create_time = models.DateTimeField(default=clock.now)
    delete_time = models.DateTimeField(null=True, blank=True, help_text="Kept at least until then")
    batches = models.ManyToManyField(Batch, related_name="job_files", blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["delete_time"], name="jobfile_delete_time")]

    def __str__(self) -> str:
        return str(self.input_file_id)
