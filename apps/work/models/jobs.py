"""Workunits and results with BOINC's state fields and values."""

from __future__ import annotations

from datetime import datetime

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from apps.applications.domain.job_bounds import MAX_DELAY_BOUND
from apps.applications.models import PROC_TYPE_CHOICES
from apps.core import clock
from apps.core.choices import enum_choices
from apps.core.domain.resources import ANONYMOUS_CODES, ProcType
from apps.work.domain.states import (
    AssimilateState,
    ClientState,
    ErrorMask,
    FileDeleteState,
    Outcome,
    ServerState,
    ValidateState,
)


class Workunit(models.Model):
    """A job: its input files, resource estimates and bounds, and replication policy."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="workunits")
    app = models.ForeignKey("applications.App", on_delete=models.PROTECT, related_name="workunits")
    name = models.CharField(max_length=254)
    # The creating service's clock (its ``now``), not the wall clock: purge ages workunits by it.
    create_time = models.DateTimeField(default=clock.now)
    batch = models.PositiveIntegerField(default=0, db_index=True)
    priority = models.IntegerField(default=0)
    command_line = models.CharField(max_length=1000, blank=True)

    rsc_fpops_est = models.FloatField(default=3.6e12, validators=[MinValueValidator(0)])
    rsc_fpops_bound = models.FloatField(default=8.64e13, validators=[MinValueValidator(0)])
    rsc_memory_bound = models.FloatField(default=5e8, validators=[MinValueValidator(0)])
    rsc_disk_bound = models.FloatField(default=1e9, validators=[MinValueValidator(0)])
    rsc_bandwidth_bound = models.FloatField(default=0, validators=[MinValueValidator(0)])
    delay_bound = models.FloatField(
        default=7 * 86400,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_DELAY_BOUND)],
        help_text="Seconds",
    )

    min_quorum = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    target_nresults = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    max_error_results = models.PositiveIntegerField(default=1)
    max_total_results = models.PositiveIntegerField(default=1)
    max_success_results = models.PositiveIntegerField(default=1)

    # Sub-states (a workunit has no single overall state in BOINC).
    need_validate = models.BooleanField(default=False)
    canonical_result = models.ForeignKey(
        "work.Result", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    canonical_credit = models.FloatField(default=0)
    transition_time = models.DateTimeField(
        null=True, blank=True, help_text="When the transitioner next looks; empty = never"
    )
    error_mask = models.PositiveIntegerField(default=0)
    transitioner_flags = models.PositiveSmallIntegerField(
        default=0, help_text="BOINC's: 1 = no transitions (broadcast), 2 = no new results (sequence steps)"
    )
    file_delete_state = models.PositiveSmallIntegerField(
        choices=enum_choices(FileDeleteState), default=FileDeleteState.INIT
    )
    assimilate_state = models.PositiveSmallIntegerField(
        choices=enum_choices(AssimilateState), default=AssimilateState.INIT
    )
    assimilated_path = models.CharField(
        max_length=500, blank=True, help_text="Where the assimilator put the output"
    )
    # Not in BOINC, whose assimilator stops on a hook error: here a failing workunit backs off
    # and the others are assimilated meanwhile (apps.work.services.assimilator).
    assimilate_attempts = models.PositiveIntegerField(
        default=0, help_text="Calls of the app's assimilator hook so far"
    )
    assimilate_retry_time = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Not assimilated before this time (the hook failed or is running); empty = at once",
    )
    assimilate_error = models.TextField(
        blank=True, help_text="Why the hook last failed; emptied once assimilated"
    )
    app_version = models.ForeignKey(
        "applications.AppVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Homogeneous app version commitment",
    )
    hr_class = models.PositiveIntegerField(
        default=0, help_text="Homogeneous redundancy class its instances go to; 0 = not committed"
    )
    output_files = models.JSONField(
        default=list, blank=True, help_text="Output file specs of each result (from the output template)"
    )
    keywords = models.CharField(max_length=200, blank=True)

    # Locality scheduling: the large input file this workunit uses (from FILENAME__*).
    locality_file_name = models.CharField(max_length=254, blank=True, db_index=True)

    # Work sequences: the id of the sequence (apps.sequences' WorkSequence) this
    # workunit is a step of. A plain column, as work sits below the sequences app; that app
    # deletes a sequence's steps with it.
    sequence_id = models.BigIntegerField(null=True, blank=True, db_index=True)
    sequence_index = models.PositiveIntegerField(null=True, blank=True)
    restartable = models.BooleanField(default=False, help_text="Its result uploads the full state")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="workunit_unique_name"),
            models.UniqueConstraint(
                fields=["sequence_id", "sequence_index"],
                condition=Q(sequence_id__isnull=False),
                name="workunit_seq_step",
            ),
            models.CheckConstraint(
                condition=Q(target_nresults__gte=models.F("min_quorum")), name="wu_target_ge_quorum"
            ),
            models.CheckConstraint(
                condition=Q(rsc_fpops_bound__gte=models.F("rsc_fpops_est")), name="wu_bound_ge_est"
            ),
        ]
        indexes = [
            # The transitioner's claim (a project's due workunits, oldest first) and the status
            # counts are one range of this index, in order, whatever the planner's statistics
            # (with transition_time indexed alone, SQLite without them reads every workunit of
            # the project).
            models.Index(fields=["project", "transition_time", "id"], name="wu_transition_due"),
            models.Index(fields=["app"], condition=Q(need_validate=True), name="wu_need_validate"),
            # The assimilator's two reads (due retries by time; new ones, retry time empty, by
            # id) are each one range of this index, already in order.
            models.Index(
                fields=["project", "assimilate_retry_time", "id"],
                condition=Q(assimilate_state=1),
                name="wu_assimilate_ready",
            ),
            models.Index(fields=["project"], condition=Q(file_delete_state=1), name="wu_file_delete_ready"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def errors(self) -> ErrorMask:
        return ErrorMask(self.error_mask)

    @property
    def is_cancelled(self) -> bool:
        return bool(self.error_mask & ErrorMask.CANCELLED)


class Result(models.Model):
    """One instance of a workunit sent (or to be sent) to a host."""

    # project, workunit and host lead composite indexes (Meta.indexes, the unique name), which
    # serve their lookups; a second single-column index would only cost every send and report
    # an extra index insertion.
    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="results", db_index=False
    )
    app = models.ForeignKey("applications.App", on_delete=models.PROTECT, related_name="results")
    workunit = models.ForeignKey(Workunit, on_delete=models.CASCADE, related_name="results", db_index=False)
    name = models.CharField(max_length=254)
    create_time = models.DateTimeField(auto_now_add=True)
    priority = models.IntegerField(default=0)

    server_state = models.PositiveSmallIntegerField(
        choices=enum_choices(ServerState), default=ServerState.UNSENT
    )
    outcome = models.PositiveSmallIntegerField(choices=enum_choices(Outcome), default=Outcome.INIT)
    client_state = models.PositiveSmallIntegerField(
        choices=enum_choices(ClientState), default=ClientState.NEW
    )
    validate_state = models.PositiveSmallIntegerField(
        choices=enum_choices(ValidateState), default=ValidateState.INIT
    )
    file_delete_state = models.PositiveSmallIntegerField(
        choices=enum_choices(FileDeleteState), default=FileDeleteState.INIT
    )

    host = models.ForeignKey(
        "hosts.Host", null=True, blank=True, on_delete=models.SET_NULL, related_name="results", db_index=False
    )
    account = models.ForeignKey(
        "volunteers.Account", null=True, blank=True, on_delete=models.SET_NULL, related_name="results"
    )
    app_version = models.ForeignKey(
        "applications.AppVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="results"
    )
    anonymous_proc_type = models.CharField(max_length=20, choices=PROC_TYPE_CHOICES, blank=True)
    platform = models.CharField(max_length=100, blank=True)
    version_num = models.PositiveIntegerField(default=0)
    plan_class = models.CharField(max_length=100, blank=True)

    sent_time = models.DateTimeField(null=True, blank=True)
    report_deadline = models.DateTimeField(null=True, blank=True)
    received_time = models.DateTimeField(null=True, blank=True)
    flops_estimate = models.FloatField(default=0, help_text="Peak FLOPS of the job's resources at dispatch")
    avg_ncpus = models.FloatField(default=0)
    gpu_usage = models.FloatField(default=0)
    proc_type = models.CharField(max_length=20, choices=PROC_TYPE_CHOICES, blank=True)

    exit_status = models.IntegerField(default=0)
    cpu_time = models.FloatField(default=0)
    elapsed_time = models.FloatField(default=0)
    stderr_out = models.TextField(blank=True)
    peak_working_set_size = models.FloatField(default=0)
    fpops_cumulative = models.FloatField(default=0)

    claimed_credit = models.FloatField(default=0)
    granted_credit = models.FloatField(default=0)
    runtime_outlier = models.BooleanField(default=False)
    credit_approx = models.BooleanField(default=True, help_text="CreditNew's 'approx' flag of the claim")

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="result_unique_name")]
        indexes = [
            models.Index(
                fields=["app", "-priority", "id"], condition=Q(server_state=2), name="result_unsent"
            ),
            # The general source filters by several apps at once; this one keeps that scan ordered.
            models.Index(
                fields=["project", "-priority", "id"],
                condition=Q(server_state=2),
                name="result_unsent_project",
            ),
            models.Index(fields=["host", "server_state"], name="result_host_state"),
            models.Index(fields=["workunit", "server_state"], name="result_wu_state"),
            models.Index(fields=["project", "server_state", "outcome"], name="result_status_counts"),
            models.Index(
                fields=["project"], condition=Q(file_delete_state=1), name="result_file_delete_ready"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def app_version_code(self) -> int:
        """BOINC's result.app_version_id: the version id, -2.. for anonymous, -1 unknown."""
        if self.app_version_id is not None:
            return self.app_version_id
        if self.anonymous_proc_type:
            return ANONYMOUS_CODES[ProcType(self.anonymous_proc_type)]
        return -1

    def is_past_deadline(self, now: datetime) -> bool:
        return self.report_deadline is not None and now > self.report_deadline
