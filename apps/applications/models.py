"""Apps, their versions (per platform and plan class), app files with signatures, plan classes."""

from __future__ import annotations

import importlib
import shlex
from typing import Any, cast

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
    SEED = "seed", "CreditNew as designed"
    BOINC = "boinc", "BOINC's later code"


class App(models.Model):
    """An application (BOINC's app table) with its job defaults and CreditNew's credit fields."""

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
    adaptive_replication = models.BooleanField(
        default=False,
        help_text=(
            "Workunits start with one result; a result sent to a host app version that is not trusted "
            "(fewer than 10 consecutive valid results, then by chance 1/consecutive_valid) raises its "
            "workunit to min_quorum and target_nresults."
        ),
    )

    # CreditNew's app fields (docs/credit.md).
    min_avg_pfc = models.FloatField(default=0, help_text="0 = not defined yet (set by the feeder)")
    host_scale_check = models.BooleanField(
        default=False, help_text="Scale probation against cherry picking (default off)."
    )
    max_jobs_in_progress = models.PositiveIntegerField(default=0, help_text="CPU jobs per host; 0 = no limit")
    max_gpu_jobs_in_progress = models.PositiveIntegerField(
        default=0, help_text="GPU jobs per host; 0 = no limit"
    )
    max_jobs_per_rpc = models.PositiveIntegerField(default=0, help_text="0 = project default")
    max_jobs_per_day_init = models.PositiveIntegerField(default=0, help_text="0 = project daily_result_quota")

    # Where BOINC's later code chose differently from CreditNew's design.
    granted_credit_policy = models.CharField(
        max_length=10,
        choices=CreditPolicyChoices.choices,
        default=CreditPolicyChoices.SEED,
        help_text="As designed: mean of non-approximate claims. BOINC: average pegged to the workunit estimate.",
    )
    probation_policy = models.CharField(
        max_length=10,
        choices=CreditPolicyChoices.choices,
        default=CreditPolicyChoices.SEED,
        help_text="As designed: host_scale_time. BOINC: 10 consecutive valid results before host scaling.",
    )
    normalization_policy = models.CharField(
        max_length=10,
        choices=CreditPolicyChoices.choices,
        default=CreditPolicyChoices.SEED,
        help_text="As designed: CreditNew's cross-version rule. BOINC: update_av_scales (GPU-only × 0.1).",
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

    # Validation and assimilation (docs/admin-guide.md, "Your science code").
    validator = models.CharField(
        max_length=200,
        default=Validator.BITWISE,
        help_text=(
            "bitwise, tolerant_numeric, trivial, or the dotted path of your own validator "
            "(a module or object with init_result and compare_results)."
        ),
    )
    validator_rel_tol = models.FloatField(default=1e-6)
    validator_abs_tol = models.FloatField(default=0)
    init_script = models.CharField(
        max_length=500,
        blank=True,
        help_text=(
            'Script validator: command checking one result, e.g. "/srv/bin/check files runtime"; '
            "exit 0 = valid. Keywords: files, result_id, runtime. Used instead of the validator."
        ),
    )
    compare_script = models.CharField(
        max_length=500,
        blank=True,
        help_text=(
            "Script validator: command comparing two results; exit 0 = equivalent. Keywords: "
            "files, result_id, runtime, files2, result_id2, runtime2."
        ),
    )
    assimilator = models.CharField(
        max_length=200,
        blank=True,
        help_text="Dotted path of a hook; empty = copy outputs to the results area.",
    )
    assimilate_script = models.CharField(
        max_length=500,
        blank=True,
        help_text=(
            "Script assimilator: command run for each finished workunit. Keywords: files, files2, "
            "wu_id, wu_name, result_id, runtime, batch_id; a failed workunit: CMD --error N wu_name "
            "wu_id batch_id."
        ),
    )

    # Work sequences (docs/sequences.md).
    max_sequence_job_fraction = models.FloatField(
        default=1.0,
        validators=[MinValueValidator(0)],
        help_text=(
            "Sequence work starves other work on hosts that hold a sequence. "
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
        if self.adaptive_replication and self.target_nresults < 2:
            errors.append("adaptive_replication needs target_nresults of at least 2 (the replicated count)")
        errors += self._science_code_problems()
        if errors:
            raise ValidationError(errors)

    def _science_code_problems(self) -> list[str]:
        """Hooks and validators that do not import, commands that do not split into words."""
        checks = {
            "assimilator": hook_import_problem,
            "sequence_hook": hook_import_problem,
            "validator": validator_import_problem,
            "init_script": command_problem,
            "compare_script": command_problem,
            "assimilate_script": command_problem,
        }
        stored = App.objects.filter(pk=self.pk).values(*checks).first() if self.pk else None
        errors = []
        for field, check in checks.items():
            # Only a hook being set or changed: an app whose hook lives on the worker machines
            # alone must still be editable (its quorum, say) from the web process.
            if stored is not None and stored[field] == getattr(self, field):
                continue
            message = check(getattr(self, field))
            if message:
                errors.append(f"{field}: {message}")
        if self.assimilator and self.assimilate_script.strip():
            errors.append("Give an assimilator or an assimilate_script, not both.")
        return errors

    def _fails_own_validators(self, field: str) -> bool:
        """A value its field's validators refuse is reported by clean_fields already."""
        try:
            cast(models.Field, self._meta.get_field(field)).run_validators(getattr(self, field))
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


def science_object_load(dotted_path: str) -> Any:
    """A project's module, or an object in one, by its dotted path."""
    try:
        return importlib.import_module(dotted_path)
    except ModuleNotFoundError as exc:
        if exc.name != dotted_path:
            raise  # the module exists, or its parent does not: the error says which
    return import_string(dotted_path)


VALIDATOR_FUNCTIONS = ("init_result", "compare_results")
VALIDATOR_OPTIONAL = ("check_set", "cleanup_result")


def validator_import_problem(name: str) -> str | None:
    """Why App.validator would not load (a built-in name, or a dotted path to a module or
    object with the validate_util2 functions), or None."""
    if name in App.Validator.values:
        return None
    if not name:
        return "give bitwise, tolerant_numeric, trivial or a dotted path"
    try:
        validator = science_object_load(name)
    except Exception as exc:  # ImportError, or anything the module raises while importing
        return f"cannot import {name!r} ({exc})"
    missing = [f for f in VALIDATOR_FUNCTIONS if not callable(getattr(validator, f, None))]
    wrong = [f for f in VALIDATOR_OPTIONAL if hasattr(validator, f) and not callable(getattr(validator, f))]
    if missing or wrong:
        return f"{name!r} has no function {', '.join(missing + wrong)} (a validator needs init_result and compare_results)"
    return None


def command_problem(command: str) -> str | None:
    """Why a configured command cannot be split into words, or None (empty: not configured)."""
    if not command.strip():
        return None
    try:
        words = shlex.split(command)
    except ValueError as exc:
        return f"cannot split {command!r} into words ({exc})"
    return None if words else "the command is empty"


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

    # CreditNew: average PFC/fpops_est of validated jobs, cross-version scale, recent credit.
    locals().update(average_columns("pfc"))
    pfc_n: float  # the columns above, named for the type checker
    pfc_avg: float
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
