"""Apps, their versions (per platform and plan class), app files with signatures, plan classes."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.module_loading import import_string

from apps.applications.domain.job_bounds import MAX_DELAY_BOUND, job_bounds_problems
from apps.applications.domain.pref_fields import parse_pref_fields
from apps.core.averages import AverageColumns, average_columns
from apps.core.domain.resources import ProcType

PROC_TYPE_CHOICES = [(p.value, p.value) for p in ProcType]


class CreditPolicyChoices(models.TextChoices):
    SEED = "seed", "Seed 003 (design document)"
    BOINC = "boinc", "BOINC's later code"


class App(models.Model):
    """An application (BOINC's app table) with its job defaults and seed-003 credit fields."""

    class Validator(models.TextChoices):
        BITWISE = "bitwise", "Bitwise: outputs must be identical"
        TOLERANT_NUMERIC = "tolerant_numeric", "Numbers equal within a tolerance"
        TRIVIAL = "trivial", "Trivial: every result is valid"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="apps")
    name = models.CharField(max_length=100)
    user_friendly_name = models.CharField(max_length=200, blank=True)
    create_time = models.DateTimeField(auto_now_add=True)
    deprecated = models.BooleanField(default=False)
    beta = models.BooleanField(default=False)
    non_cpu_intensive = models.BooleanField(default=False)
    weight = models.FloatField(default=1, validators=[MinValueValidator(0)])

    # Job defaults used by create_work when the template and command line are silent.
    min_quorum = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    target_nresults = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    max_error_results = models.PositiveIntegerField(default=3)
    max_total_results = models.PositiveIntegerField(default=10)
    max_success_results = models.PositiveIntegerField(default=6)
    delay_bound = models.FloatField(
        default=7 * 86400,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_DELAY_BOUND)],
        help_text="Seconds",
    )

    # Seed 003 app fields.
    min_avg_pfc = models.FloatField(default=0, help_text="0 = not defined yet (set by the feeder)")
    host_scale_check = models.BooleanField(
        default=False, help_text="Scale probation against cherry picking (seed 003; default off)."
    )
    max_jobs_in_progress = models.PositiveIntegerField(default=0, help_text="CPU jobs per host; 0 = no limit")
    max_gpu_jobs_in_progress = models.PositiveIntegerField(
        default=0, help_text="GPU jobs per host; 0 = no limit"
    )
    max_jobs_per_rpc = models.PositiveIntegerField(default=0, help_text="0 = project default")
    max_jobs_per_day_init = models.PositiveIntegerField(default=0, help_text="0 = project daily_result_quota")

    # Where BOINC's later code chose differently from seed 003.
    granted_credit_policy = models.CharField(
        max_length=10,
        choices=CreditPolicyChoices.choices,
        default=CreditPolicyChoices.SEED,
        help_text="Seed: mean of non-approximate claims. BOINC: average pegged to the workunit estimate.",
    )
    probation_policy = models.CharField(
        max_length=10,
        choices=CreditPolicyChoices.choices,
        default=CreditPolicyChoices.SEED,
        help_text="Seed: host_scale_time. BOINC: 10 consecutive valid results before host scaling.",
    )
    normalization_policy = models.CharField(
        max_length=10,
        choices=CreditPolicyChoices.choices,
        default=CreditPolicyChoices.SEED,
        help_text="Seed: cross-version rule of the document. BOINC: update_av_scales (GPU-only × 0.1).",
    )
    runtime_outlier_check = models.BooleanField(
        default=False, help_text="BOINC: treat p_fpops of exactly 1e9 as a failed benchmark (4.3e9 used)."
    )
    max_granted_credit = models.FloatField(default=0, help_text="0 = no cap; BOINC's default is 7.3e7")

    # Replication (BOINC's app fields).
    homogeneous_redundancy = models.PositiveSmallIntegerField(
        choices=[(0, "Off"), (1, "Fine: OS and CPU model"), (2, "Coarse: OS and CPU vendor")],
        default=0,
        help_text="Send all instances of a workunit to hosts of one class, so that results "
        "that differ numerically across platforms are never compared.",
    )
    homogeneous_app_version = models.BooleanField(
        default=False,
        help_text="Run all instances of a workunit with the app version its first instance was sent with.",
    )

    # Validation and assimilation.
    validator = models.CharField(max_length=20, choices=Validator.choices, default=Validator.BITWISE)
    validator_rel_tol = models.FloatField(default=1e-6)
    validator_abs_tol = models.FloatField(default=0)
    assimilator = models.CharField(
        max_length=200,
        blank=True,
        help_text="Dotted path of a hook; empty = copy outputs to the results area.",
    )

    # Work sequences (seed 001).
    max_sequence_job_fraction = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0)],
        help_text=(
            "Sequence work starves other work on hosts that hold a sequence (seed 001). "
            "This bounds the fraction of a host's jobs in progress that may be sequence jobs."
        ),
    )
    sequence_redundancy = models.BooleanField(
        default=False, help_text="Run replica chains of each sequence on different hosts and compare them."
    )
    sequence_hook = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "Dotted path of the function called when a sequence step validates: it may extend or end "
            "the sequence. Empty = extend open-ended sequences a few steps at a time until ended."
        ),
    )

    # Project preferences (the volunteer's page, sent in <project_specific>).
    prefs_fields = models.TextField(
        blank=True,
        help_text=(
            "Extra project preferences this app reads, one per line as name: label (e.g. "
            "color_scheme: Colour scheme of the graphics). Volunteers set them on the project "
            "preferences page; jobs find them in the client's project_specific preferences."
        ),
    )

    class Meta:
        ordering = ["project_id", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="app_unique_name")]

    def __str__(self) -> str:
        return self.user_friendly_name or self.name

    def clean(self) -> None:
        """Refuse job defaults that every later create_work would refuse (the same rules, from
        the same function) and hooks that do not import. Non-field errors: a form showing only
        some of these fields must still show them."""
        errors = [
            problem.message
            for problem in job_bounds_problems({f: getattr(self, f) for f in JOB_DEFAULT_FIELDS})
            if not any(self._fails_own_validators(f) for f in problem.fields)
        ]
        errors += [f"Project preferences: {p}" for p in parse_pref_fields(self.prefs_fields)[1]]
        stored = (
            App.objects.filter(pk=self.pk).values("assimilator", "sequence_hook").first() if self.pk else None
        )
        for field in ("assimilator", "sequence_hook"):
            # Only a hook being set or changed: an app whose hook lives on the worker machines
            # alone must still be editable (its quorum, say) from the web process.
            if stored is not None and stored[field] == getattr(self, field):
                continue
            message = hook_import_problem(getattr(self, field))
            if message:
                errors.append(f"{field}: {message}")
        if errors:
            raise ValidationError(errors)

    def _fails_own_validators(self, field: str) -> bool:
        """A value its field's validators refuse is reported by clean_fields already."""
        try:
            self._meta.get_field(field).run_validators(getattr(self, field))
        except ValidationError:
            return True
        return False


# The App fields create_work takes as a job's defaults (apps.work.services.create._resolve).
JOB_DEFAULT_FIELDS = (
    "min_quorum",
    "target_nresults",
    "max_error_results",
    "max_total_results",
    "max_success_results",
    "delay_bound",
)


def hook_import_problem(dotted_path: str) -> str | None:
    """Why a hook path (App.assimilator, App.sequence_hook) would not load, or None. Loaded as
    the assimilator and the sequence service load them (django's import_string), here at
    save time instead of at the first validated workunit."""
    if not dotted_path:
        return None
    try:
        hook = import_string(dotted_path)
    except Exception as exc:  # ImportError, or anything the module raises while importing
        return f"cannot import {dotted_path!r} ({exc})"
    if not callable(hook):
        return f"{dotted_path!r} is not a function"
    return None


class PlanClass(models.Model):
    """A project-defined plan class (the standard BOINC names are built in)."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="plan_classes")
    name = models.CharField(max_length=100)
    proc_type = models.CharField(max_length=20, choices=PROC_TYPE_CHOICES, default=ProcType.CPU.value)
    avg_ncpus = models.FloatField(default=1, validators=[MinValueValidator(0)])
    multi_thread = models.BooleanField(default=False)
    max_ncpus = models.FloatField(default=0, validators=[MinValueValidator(0)])
    gpu_usage = models.FloatField(default=0, validators=[MinValueValidator(0)])
    min_gpu_ram_mb = models.FloatField(default=0, validators=[MinValueValidator(0)])
    needs_opencl = models.BooleanField(default=False)
    min_compute_capability = models.PositiveIntegerField(default=0)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "plan classes"
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="planclass_unique_name")]

    def __str__(self) -> str:
        return self.name


class AppVersion(models.Model):
    """A version of an app for one platform and plan class, with its credit statistics."""

    app = models.ForeignKey(App, on_delete=models.CASCADE, related_name="versions")
    platform = models.ForeignKey("projects.Platform", on_delete=models.PROTECT, related_name="app_versions")
    version_num = models.PositiveIntegerField(help_text="e.g. 100 for 1.00")
    plan_class = models.CharField(max_length=100, blank=True)
    create_time = models.DateTimeField(auto_now_add=True)
    deprecated = models.BooleanField(default=False)
    beta = models.BooleanField(default=False)
    api_version = models.CharField(max_length=20, blank=True)
    cmdline = models.CharField(max_length=500, blank=True)
    min_core_version = models.PositiveIntegerField(default=0)
    max_core_version = models.PositiveIntegerField(default=0)

    # Resource usage resolved from the plan class when the version is added.
    proc_type = models.CharField(max_length=20, choices=PROC_TYPE_CHOICES, default=ProcType.CPU.value)
    avg_ncpus = models.FloatField(default=1, validators=[MinValueValidator(0)])
    max_ncpus = models.FloatField(default=0, validators=[MinValueValidator(0)])
    multi_thread = models.BooleanField(default=False)
    gpu_usage = models.FloatField(default=0, validators=[MinValueValidator(0)])

    # Seed 003: average PFC/fpops_est of validated jobs, cross-version scale, recent credit.
    locals().update(average_columns("pfc"))
    pfc = AverageColumns("pfc")
    pfc_scale = models.FloatField(default=0, help_text="0 = not defined (no cross-version normalization)")
    expavg_credit = models.FloatField(default=0)
    expavg_time = models.FloatField(default=0)

    class Meta:
        ordering = ["app_id", "platform_id", "version_num", "plan_class"]
        constraints = [
            models.UniqueConstraint(
                fields=["app", "platform", "version_num", "plan_class"], name="appversion_identity"
            ),
            models.CheckConstraint(
                condition=Q(gpu_usage__gte=0) & Q(avg_ncpus__gte=0), name="appversion_usage"
            ),
        ]

    def __str__(self) -> str:
        suffix = f" ({self.plan_class})" if self.plan_class else ""
        return f"{self.app.name} {self.version_num / 100:.2f} {self.platform.name}{suffix}"

    @property
    def is_gpu(self) -> bool:
        return self.proc_type != ProcType.CPU.value

    @property
    def resource(self) -> ProcType:
        return ProcType(self.proc_type)


class AppFile(models.Model):
    """A file of an app version, stored in the project's download area, with its signature."""

    app_version = models.ForeignKey(AppVersion, on_delete=models.CASCADE, related_name="files")
    file_name = models.CharField(max_length=255, help_text="Physical name in the download area")
    open_name = models.CharField(max_length=255, blank=True)
    main_program = models.BooleanField(default=False)
    copy_file = models.BooleanField(default=False)
    executable = models.BooleanField(default=True)
    md5_cksum = models.CharField(max_length=32)
    nbytes = models.PositiveBigIntegerField()
    file_signature = models.TextField(blank=True, help_text="RSA signature of the MD5 (BOINC text format)")
    ordinal = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["app_version_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["app_version", "file_name"], name="appfile_unique"),
            models.UniqueConstraint(
                fields=["app_version"], condition=Q(main_program=True), name="appfile_one_main_program"
            ),
        ]

    def __str__(self) -> str:
        return self.file_name
