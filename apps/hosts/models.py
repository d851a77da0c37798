"""Hosts (volunteer computers), their coprocessors, and per-(host, app version) statistics."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Upper

from apps.applications.models import PROC_TYPE_CHOICES
from apps.core.averages import AverageColumns, average_columns
from apps.core.db import PrefixSearchable
from apps.core.domain.resources import ANONYMOUS_CODES, ProcType


class Host(models.Model):
    """A computer attached to a project, as the scheduler last saw it (BOINC's host table)."""

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="hosts")
    account = models.ForeignKey("volunteers.Account", on_delete=models.CASCADE, related_name="hosts")
    create_time = models.DateTimeField(auto_now_add=True)
    rpc_seqno = models.PositiveIntegerField(default=0)
    rpc_time = models.DateTimeField(null=True, blank=True)
    host_cpid = models.CharField(max_length=64, blank=True, db_index=True)
    domain_name = models.CharField(max_length=255, blank=True)
    last_ip_addr = models.CharField(max_length=64, blank=True)
    timezone = models.IntegerField(default=0)
    venue = models.CharField(max_length=50, blank=True)
    platform_name = models.CharField(max_length=100, blank=True)
    client_version = models.CharField(max_length=20, blank=True)

    # Hardware (host_info).
    p_ncpus = models.PositiveIntegerField(default=1)
    p_vendor = models.CharField(max_length=255, blank=True)
    p_model = models.CharField(max_length=255, blank=True)
    p_features = models.TextField(blank=True)
    p_fpops = models.FloatField(default=1e9, help_text="Whetstone FLOPS per CPU")
    p_iops = models.FloatField(default=1e9)
    p_membw = models.FloatField(default=0)
    os_name = models.CharField(max_length=255, blank=True)
    os_version = models.CharField(max_length=255, blank=True)
    m_nbytes = models.FloatField(default=0)
    m_cache = models.FloatField(default=0)
    m_swap = models.FloatField(default=0)
    d_total = models.FloatField(default=0)
    d_free = models.FloatField(default=0)
    n_bwup = models.FloatField(default=0)
    n_bwdown = models.FloatField(default=0)

    # time_stats
    on_frac = models.FloatField(default=1)
    connected_frac = models.FloatField(default=1)
    active_frac = models.FloatField(default=1)
    gpu_active_frac = models.FloatField(default=1)

    # Credit and reliability.
    total_credit = models.FloatField(default=0)
    expavg_credit = models.FloatField(default=0)
    expavg_time = models.FloatField(default=0)
    avg_turnaround = models.FloatField(default=0)
    credit_per_cpu_sec = models.FloatField(default=0)
    blacklisted = models.BooleanField(
        "blocked",
        default=False,
        help_text="The scheduler refuses this host and sends it no work (BOINC's max_results_day = -1)",
    )
    last_rpc_day = models.DateField(null=True, blank=True, help_text="For the daily job counters")

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project", "-expavg_credit", "id"], name="host_top_rac"),
            models.Index(fields=["project", "-total_credit", "id"], name="host_top_total"),
            models.Index(fields=["account", "host_cpid"], name="host_by_cpid"),
            # The admin's search by the start of a host name, in any case.
            models.Index(PrefixSearchable(Upper("domain_name")), name="host_name_prefix"),
        ]

    def __str__(self) -> str:
        return f"host {self.pk} ({self.domain_name or self.p_model or 'unknown'})"

    @property
    def peak_flops(self) -> float:
        """The host's total peak FLOPS: CPUs plus every GPU (for 'current GigaFLOPS')."""
        total = self.p_ncpus * self.p_fpops
        for coproc in self.coprocs.all():
            total += coproc.count * coproc.peak_flops
        return total


class DeletedHost(models.Model):
    """An exported host that was deleted, alone or with its account (BOINC's host_deleted).

    db_dump lists these so statistics sites drop the computer; ``host_cpid`` is the id it
    was exported under. Records expire (apps.portal.stats_export).
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    hostid = models.BigIntegerField(help_text="The deleted host's id")
    host_cpid = models.CharField(max_length=64, blank=True)
    create_time = models.DateTimeField(db_index=True, help_text="When the host was deleted")

    class Meta:
        ordering = ["hostid"]
        constraints = [models.UniqueConstraint(fields=["project", "hostid"], name="deleted_host_unique")]

    def __str__(self) -> str:
        return f"deleted host {self.hostid}"


class HostCoproc(models.Model):
    """One coprocessor type on a host (count instances of the same GPU model)."""

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="coprocs")
    proc_type = models.CharField(max_length=20, choices=PROC_TYPE_CHOICES)
    name = models.CharField(max_length=255, blank=True)
    count = models.PositiveIntegerField(default=1)
    peak_flops = models.FloatField(default=0)
    available_ram = models.FloatField(default=0, help_text="Bytes")
    have_opencl = models.BooleanField(default=False)
    compute_capability = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["host_id", "proc_type"]
        constraints = [models.UniqueConstraint(fields=["host", "proc_type"], name="hostcoproc_unique")]

    def __str__(self) -> str:
        return f"{self.count} × {self.name or self.proc_type}"


class HostAppVersion(models.Model):
    """CreditNew's host_app_version: per (host, app version) statistics and punishment.

    Anonymous-platform jobs have no AppVersion row; their record is keyed by
    (host, app, resource type), BOINC's -2/-3/-4 codes.
    """

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="app_versions")
    app = models.ForeignKey("applications.App", on_delete=models.CASCADE, related_name="+")
    app_version = models.ForeignKey(
        "applications.AppVersion",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="host_versions",
    )
    anonymous_proc_type = models.CharField(
        max_length=20,
        choices=PROC_TYPE_CHOICES,
        blank=True,
        help_text="Set only for anonymous-platform records",
    )

    locals().update(average_columns("pfc"))
    pfc = AverageColumns("pfc")
    locals().update(average_columns("et", with_var=True))
    et = AverageColumns("et", with_var=True)
    locals().update(average_columns("turnaround", with_var=True))
    turnaround = AverageColumns("turnaround", with_var=True)
    # The columns above, named for the type checker.
    pfc_n: float
    pfc_avg: float
    et_n: float
    et_avg: float
    et_var: float
    et_q: float
    turnaround_n: float
    turnaround_avg: float
    turnaround_var: float
    turnaround_q: float

    host_scale_time = models.FloatField(
        default=0, help_text="Unix time before which host scaling is not used"
    )
    scale_probation = models.BooleanField(default=True)
    error_rate = models.FloatField(default=0.1, help_text="Initial 0.1: replicate for a while")
    max_jobs_per_day = models.IntegerField(default=0, help_text="0 = initialise from the app/project quota")
    n_jobs_today = models.PositiveIntegerField(default=0)
    consecutive_valid = models.PositiveIntegerField(default=0)

    class Meta:
        # By columns, not relations: ordering by a relation joins (and FOR UPDATE locks) its table.
        ordering = ["host_id", "app_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["host", "app_version"],
                condition=Q(app_version__isnull=False),
                name="hav_unique_version",
            ),
            models.UniqueConstraint(
                fields=["host", "app", "anonymous_proc_type"],
                condition=Q(app_version__isnull=True),
                name="hav_unique_anonymous",
            ),
            models.CheckConstraint(
                condition=Q(app_version__isnull=False, anonymous_proc_type="")
                | Q(app_version__isnull=True) & ~Q(anonymous_proc_type=""),
                name="hav_version_or_anonymous",
            ),
        ]

    def __str__(self) -> str:
        return f"host {self.host_id} / {self.app_version or f'anonymous {self.anonymous_proc_type}'}"

    @property
    def app_version_code(self) -> int:
        """BOINC's app_version_id: the version's id, or -2/-3/-4... for anonymous platform."""
        if self.app_version_id is not None:
            return self.app_version_id
        return ANONYMOUS_CODES[ProcType(self.anonymous_proc_type)]
