from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import ForeignKey, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html

from apps.applications import services
from apps.applications.admin_fields import app_label
from apps.applications.admin_versions import app_version_add_view
from apps.applications.models import App, AppFile, AppVersion, PlanClass


class AppVersionInline(admin.TabularInline):
    model = AppVersion
    fields = [
        "platform",
        "version_num",
        "plan_class",
        "proc_type",
        "avg_ncpus",
        "gpu_usage",
        "deprecated",
        "pfc_n",
        "pfc_avg",
        "pfc_scale",
    ]
    # Versions are added with their files (App versions > Add, or add_app_version); the files
    # are named after platform, version and plan class, so those are fixed here.
    readonly_fields = ["platform", "version_num", "plan_class", "pfc_n", "pfc_avg", "pfc_scale"]
    extra = 0
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[AppVersion]:
        # Each row's change link is named after its app and platform.
        return super().get_queryset(request).select_related("app", "platform")

    def formfield_for_foreignkey(
        self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField | None:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None:
            # Read the platforms once for the page; every row's select copies this list
            # instead of querying the table again.
            field.choices = list(field.choices)  # type: ignore[arg-type]  # the stubs give the getter the setter's type
        return field


@admin.register(App)
class AppAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "user_friendly_name",
        "project",
        "min_quorum",
        "target_nresults",
        "min_avg_pfc",
        "host_scale_check",
        "deprecated",
    ]
    list_filter = ["project", "deprecated", "host_scale_check"]
    search_fields = ["name", "user_friendly_name"]
    list_select_related = ["project"]
    readonly_fields = ["min_avg_pfc", "create_time", "credit_view", "hr_classes_view"]
    inlines = [AppVersionInline]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "project",
                    "name",
                    "user_friendly_name",
                    "deprecated",
                    "beta",
                    "non_cpu_intensive",
                    "weight",
                    "prefs_fields",
                    "create_time",
                ]
            },
        ),
        (
            "Job defaults",
            {
                "fields": [
                    "min_quorum",
                    "target_nresults",
                    "max_error_results",
                    "max_total_results",
                    "max_success_results",
                    "delay_bound",
                    "adaptive_replication",
                ]
            },
        ),
        (
            "Limits",
            {
                "fields": [
                    "max_jobs_in_progress",
                    "max_gpu_jobs_in_progress",
                    "max_jobs_per_rpc",
                    "max_jobs_per_day_init",
                ]
            },
        ),
        (
            "Credit (CreditNew)",
            {
                "fields": [
                    "min_avg_pfc",
                    "credit_view",
                    "host_scale_check",
                    "granted_credit_policy",
                    "probation_policy",
                    "normalization_policy",
                    "runtime_outlier_check",
                    "max_granted_credit",
                ]
            },
        ),
        (
            "Replication",
            {
                "fields": ["homogeneous_redundancy", "hr_classes_view", "homogeneous_app_version"],
                "description": "Keep results that differ numerically across platforms, or between CPU and GPU "
                "versions, from ever being compared.",
            },
        ),
        (
            "Validation and assimilation",
            {
                "fields": [
                    "validator",
                    "validator_rel_tol",
                    "validator_abs_tol",
                    "init_script",
                    "compare_script",
                    "assimilator",
                    "assimilate_script",
                ]
            },
        ),
        (
            "Work sequences",
            {
                "fields": ["max_sequence_job_fraction", "sequence_redundancy", "sequence_hook"],
                "description": "A project that mixes sequence and non-sequence work starves the non-sequence work "
                "on hosts that hold a sequence; max_sequence_job_fraction bounds it.",
            },
        ),
    ]

    @admin.display(description="Credit view")
    def credit_view(self, obj: App | None) -> str:
        """Link to the credit admin view (in apps.credit.admin, reached by URL name only:
        applications sits below credit in the layers and may not import it)."""
        if obj is None or obj.pk is None:
            return "-"
        url = reverse("admin:credit_app_credit", args=[obj.pk])
        return format_html('<a href="{}">Version scales, probation, credit per job, recompute</a>', url)

    @admin.display(description="Host classes")
    def hr_classes_view(self, obj: App | None) -> str:
        """Link to the project's computing per homogeneous redundancy class (hosts admin)."""
        if obj is None or obj.pk is None:
            return "-"
        url = reverse("admin:hosts_host_hr_classes", args=[obj.project_id])
        return format_html('<a href="{}">Computing per class among the project\'s hosts</a>', url)


class AppFileInline(admin.TabularInline):
    """A version's files as add_app_version (or the add form) stored and signed them: a file
    row typed in here would name no file in the download area and carry no signature."""

    model = AppFile
    readonly_fields = fields = (
        "file_name",
        "open_name",
        "main_program",
        "copy_file",
        "nbytes",
        "md5_cksum",
        "signed",
    )
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    @admin.display(boolean=True)
    def signed(self, obj: AppFile) -> bool:
        return bool(obj.file_signature)


@admin.register(AppVersion)
class AppVersionAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "project_app",
        "platform",
        "version_num",
        "plan_class",
        "proc_type",
        "pfc_n",
        "pfc_avg",
        "pfc_scale",
        "expavg_credit",
        "deprecated",
    ]
    list_filter = ["app__project", "platform", "proc_type", "deprecated"]
    search_fields = ["app__name", "plan_class"]
    list_select_related = ["app__project", "platform"]
    readonly_fields = ["pfc_n", "pfc_avg", "pfc_scale", "expavg_credit", "expavg_time", "create_time"]
    # The files are named after these (and signed): they are fixed once the version exists.
    identity_fields = ["app", "platform", "version_num", "plan_class"]
    inlines = [AppFileInline]
    actions = ["deprecate"]

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        return app_version_add_view(request, self)

    def get_readonly_fields(self, request: HttpRequest, obj: AppVersion | None = None) -> list[str]:
        return [*self.readonly_fields, *self.identity_fields]

    @admin.display(description="app", ordering="app__name")
    def project_app(self, obj: AppVersion) -> str:
        return app_label(obj.app)

    @admin.action(description="Deprecate the selected app versions (no new jobs)", permissions=["change"])
    def deprecate(self, request: HttpRequest, queryset: QuerySet[AppVersion]) -> None:
        n = services.app_version_deprecate(app_version_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} app version(s) deprecated.", messages.SUCCESS)


@admin.register(PlanClass)
class PlanClassAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "proc_type", "avg_ncpus", "gpu_usage", "multi_thread"]
    list_filter = ["project", "proc_type"]
    search_fields = ["name"]
