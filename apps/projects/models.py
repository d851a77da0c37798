"""Projects hosted by the portal, platforms, and the record of daemon runs."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.urls import reverse

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]{0,48}$",
    "Use lower-case letters, digits, '-' and '_' (it becomes part of every URL).",
)

# Top-level paths of the portal itself: a project with one of these slugs would have its
# master URL, scheduler and pages shadowed by the admin, the API or the static files.
RESERVED_SLUGS = frozenset({"admin", "api", "static", "health", "metrics"})


def slug_not_reserved(value: str) -> None:
    if value in RESERVED_SLUGS:
        raise ValidationError(f"'{value}' is a path of the portal itself; choose another slug.")


def host_has_dot(value: str) -> None:
    """The stock client attaches only to a master URL whose host contains a dot (BOINC's
    valid_master_url): http://localhost:8000/ is an "Invalid URL", http://127.0.0.1:8000/ is fine."""
    if "." not in (urlsplit(value).hostname or ""):
        raise ValidationError(
            "The BOINC client refuses a master URL whose host has no dot (such as localhost): "
            "use 127.0.0.1 or a full host name."
        )


def default_report_grace_period() -> int:
    """A new project's grace period: the site's COBBLESTONE_REPORT_GRACE_PERIOD (default 3600)."""
    return settings.COBBLESTONE_REPORT_GRACE_PERIOD


class Project(models.Model):
    """A BOINC project: its own master URL, scheduler, keys, data areas and configuration.

    The configuration fields mirror BOINC's config.xml options of the same names.
    """

    slug = models.CharField(
        max_length=50,
        unique=True,
        validators=[slug_validator, slug_not_reserved],
        help_text=(
            "Fixed once the project exists: the master URL attached clients use and the data "
            "directories (download, upload, results, archive) are named after it."
        ),
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    create_time = models.DateTimeField(auto_now_add=True)
    base_url = models.URLField(
        blank=True,
        validators=[host_has_dot],
        help_text="Public base URL; empty means COBBLESTONE_BASE_URL. Host must contain a dot.",
    )

    # Operational switches (BOINC's stop_sched / project_is_down / web_stopped).
    sched_stopped = models.BooleanField(default=False, help_text="Scheduler answers 'project is down'.")
    web_stopped = models.BooleanField(default=False)
    account_creation_disabled = models.BooleanField(default=False)
    min_passwd_length = models.PositiveIntegerField(default=6)
    min_core_client_version = models.PositiveIntegerField(
        default=0, help_text="major*10000+minor*100+release; 0 = any"
    )

    # Scheduling options.
    request_delay = models.FloatField(default=5, validators=[MinValueValidator(0)])
    next_rpc_delay = models.FloatField(default=0, validators=[MinValueValidator(0)])
    # Both at least 1. BOINC reads max_wus_to_send 0 as "no per-RPC limit", the scheduler here
    # as 1 job per device; gpu_multiplier 0 would leave GPUs out of the per-RPC limit and count
    # all of a host's GPUs as one device in its daily quota.
    max_wus_to_send = models.PositiveIntegerField(
        default=10,
        validators=[MinValueValidator(1)],
        help_text="Jobs per RPC per CPU (and per GPU × gpu_multiplier); at least 1.",
    )
    max_wus_in_progress = models.PositiveIntegerField(default=0, help_text="Per CPU; 0 = no limit.")
    max_wus_in_progress_gpu = models.PositiveIntegerField(default=0, help_text="Per GPU; 0 = no limit.")
    gpu_multiplier = models.PositiveIntegerField(
        default=1,
        validators=[MinValueValidator(1)],
        help_text="Each GPU counts as this many devices in the per-RPC and daily job limits; at least 1.",
    )
    # A client says how many CPUs and GPUs it has, and those counts multiply the per-RPC,
    # in-progress and daily limits: BOINC believes at most config.xml's max_ncpus CPUs
    # (default 64, never past 4096) and 64 GPUs of a type (sched_send.h's MAX_GPUS).
    max_ncpus = models.PositiveIntegerField(
        default=64,
        validators=[MinValueValidator(1), MaxValueValidator(4096)],
        help_text="CPUs a host is counted as having, at most, for its job limits (it may report more).",
    )
    max_ngpus = models.PositiveIntegerField(
        default=64,
        validators=[MinValueValidator(1), MaxValueValidator(4096)],
        help_text="GPUs of each type a host is counted as having, at most, for its job limits.",
    )
    daily_result_quota = models.PositiveIntegerField(
        default=200, help_text="Initial max jobs per day per host_app_version, per CPU/GPU."
    )
    report_grace_period = models.PositiveIntegerField(
        default=default_report_grace_period,
        help_text="Seconds after the deadline (new projects: COBBLESTONE_REPORT_GRACE_PERIOD).",
    )
    resend_lost_results = models.BooleanField(default=False)
    one_result_per_user_per_wu = models.BooleanField(default=False)
    ignore_delay_bound = models.BooleanField(default=False)
    delete_delay_hours = models.FloatField(default=0, validators=[MinValueValidator(0)])

    # Reliable hosts and accelerated retries (config.xml names; 0 = off).
    reliable_max_avg_turnaround = models.FloatField(
        default=0,
        validators=[MinValueValidator(0)],
        help_text="Seconds: a host app version with a longer average turnaround is not reliable (0 = no bound).",
    )
    reliable_max_error_rate = models.FloatField(
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text="A host app version with a higher error rate is not reliable (0 = no bound).",
    )
    reliable_on_priority = models.IntegerField(
        default=0,
        help_text="Results of at least this priority go to reliable hosts, with the reduced deadline (0 = off).",
    )
    reliable_reduced_delay_bound = models.FloatField(
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text="Fraction of the delay bound a reliable host gets for such a result (0 = the whole bound).",
    )
    reliable_priority_on_over = models.IntegerField(
        default=0, help_text="Priority added to a retry once some result of its workunit is over."
    )
    reliable_priority_on_over_except_error = models.IntegerField(
        default=0, help_text="The same, only when no result of the workunit ended in error."
    )
    batch_accel_fraction = models.FloatField(
        default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text=(
            "When at most this fraction of a batch's workunits is unfinished, their unsent results get "
            "reliable_on_priority (0 = off)."
        ),
    )

    # Locality scheduling (docs/locality.md).
    locality_scheduling = models.BooleanField(default=False)
    locality_scheduling_sorted_order = models.BooleanField(
        default=False, help_text="Search files in increasing name order instead of random order."
    )
    locality_scheduling_wait_period = models.FloatField(
        default=0,
        validators=[MinValueValidator(0)],
        help_text="Seconds to wait for on-demand work for a file (0 = do not wait).",
    )
    locality_trigger_dir = models.CharField(
        max_length=500,
        blank=True,
        help_text="If set, also honour BOINC's trigger directories (need_work, no_work_available, ...) here.",
    )
    locality_work_generator = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "Dotted path of the on-demand work generator called for 'need work for file X' signals "
            "(e.g. apps.locality.generators.example_work_generator); empty = none in-process."
        ),
    )

    # Credit (docs/credit.md); per-app options live on the app. The cheat bounds below hold a
    # host that inflates its elapsed time or benchmarks to its own jobs.
    credit_by_app = models.BooleanField(default=True, help_text="Keep per-app credit for users and teams.")
    credit_version_sample_cap = models.FloatField(
        default=10,
        validators=[MinValueValidator(1)],
        help_text=(
            "A job's PFC sample is capped at this many times its app version's average before it "
            "enters that average (the design suggests 100; BOINC's code uses 10)."
        ),
    )
    credit_host_sample_cap = models.FloatField(
        default=10,
        validators=[MinValueValidator(1)],
        help_text="The same cap for a host's own averages (the design suggests 10).",
    )
    credit_host_scale_max = models.FloatField(
        default=10,
        validators=[MinValueValidator(1)],
        help_text="Host normalization never multiplies a claim by more than this (the design suggests 10).",
    )
    credit_version_median = models.BooleanField(
        default=True,
        help_text=(
            "Every 10 minutes, set each app version's PFC average to the sample-median of its "
            "hosts' averages (the design's remedy), so that no single host can move it. Off: the "
            "plain running average, which one inflating host can raise for everyone."
        ),
    )
    credit_claim_cap = models.FloatField(
        default=10,
        validators=[MinValueValidator(0)],
        help_text=(
            "Before a host's own average can normalize its claims (its first jobs), a claim is "
            "capped at this many times its app version's typical job; 0 = no cap. Not in BOINC's "
            "design or code."
        ),
    )
    stats_export = models.BooleanField(default=True, help_text="Write db_dump-style stats files daily.")

    # Work sequences (docs/sequences.md).
    sequence_max_disagreements = models.PositiveIntegerField(
        default=2,
        help_text=(
            "Replica chains of a sequence that disagree at a checkpoint restart from the last agreed "
            "one on other hosts; after this many restarts they end in ERROR instead."
        ),
    )

    # Keys in BOINC's text format. The private code-signing key may stay off the server.
    code_sign_public_key = models.TextField(blank=True)
    code_sign_private_key = models.TextField(
        blank=True, help_text="Empty if apps are signed offline (signatures uploaded with each file)."
    )
    code_sign_key_signature = models.TextField(
        blank=True, help_text="The current public key signed with the previous private key (rotation)."
    )
    upload_public_key = models.TextField(blank=True)
    upload_private_key = models.TextField(blank=True)
    ignore_upload_certificates = models.BooleanField(
        default=False,
        help_text="Accept uploads without checking their signed authorization (BOINC's option of this name).",
    )
    paused_daemons = models.JSONField(
        default=list, blank=True, help_text="Names of periodic daemons paused for this project."
    )
    # A BOINC project imported with its host ids shifted (ids its portal already used):
    # attached clients still send the old ids, which the scheduler maps to the new ones.
    boinc_hostid_offset = models.BigIntegerField(
        default=0, help_text="Imported BOINC host ids up to boinc_hostid_max are this much higher here."
    )
    boinc_hostid_max = models.BigIntegerField(
        default=0, help_text="The highest host id of the imported BOINC project (0: no mapping)."
    )
    purge_min_age_days = models.FloatField(
        default=7,
        validators=[MinValueValidator(0)],
        help_text="db_purge archives and deletes finished workunits this many days after their last report.",
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("portal:project_home", kwargs={"slug": self.slug})

    # --- URLs the client sees (all derived from one base, so a move is one setting) ---
    @property
    def public_base(self) -> str:
        return (self.base_url or settings.COBBLESTONE_BASE_URL).rstrip("/")

    @property
    def master_url(self) -> str:
        return f"{self.public_base}/{self.slug}/"

    @property
    def scheduler_url(self) -> str:
        return f"{self.master_url}cgi"

    @property
    def download_url(self) -> str:
        return f"{self.master_url}download"

    @property
    def upload_url(self) -> str:
        return f"{self.master_url}file_upload_handler"

    # --- Data areas on disk ---
    @property
    def data_dir(self) -> Path:
        return Path(settings.COBBLESTONE_DATA_DIR) / self.slug

    @property
    def download_dir(self) -> Path:
        return self.data_dir / "download"

    @property
    def upload_dir(self) -> Path:
        return self.data_dir / "upload"

    @property
    def results_dir(self) -> Path:
        return self.data_dir / "results"

    @property
    def archive_dir(self) -> Path:
        return self.data_dir / "archive"

    def host_id_from_client(self, hostid: int) -> int:
        """The host a client's hostid names: an imported BOINC host's old id maps to its new one."""
        if self.boinc_hostid_offset and 0 < hostid <= self.boinc_hostid_max:
            return hostid + self.boinc_hostid_offset
        return hostid

    def is_daemon_paused(self, daemon: str) -> bool:
        return daemon in (self.paused_daemons or [])


class Platform(models.Model):
    """A client platform (x86_64-pc-linux-gnu, windows_x86_64, ...); shared by all projects."""

    name = models.CharField(max_length=100, unique=True)
    user_friendly_name = models.CharField(max_length=200, blank=True)
    deprecated = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DaemonRun(models.Model):
    """One pass of a back-end daemon (transitioner, validator, feeder, ...) for a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="daemon_runs", null=True)
    daemon = models.CharField(max_length=50, db_index=True)
    started = models.DateTimeField()
    duration = models.FloatField(default=0, help_text="Seconds")
    items = models.PositiveIntegerField(default=0, help_text="Rows handled")
    errors = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["-started"]
        indexes = [models.Index(fields=["project", "daemon", "-started"], name="daemonrun_latest")]

    def __str__(self) -> str:
        return f"{self.daemon} @ {self.started:%Y-%m-%d %H:%M:%S}"
