"""The project admin with its dashboard (server status counts, daemon runs) and daemon pausing."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from apps.portal.dashboard import project_dashboard_view
from apps.projects.models import Project
from apps.projects.services import project_daemons_set_paused, project_save_new
from boincproj.celery import DEFAULT_SCHEDULE

DAEMON_CHOICES = [(e.name, f"{e.name}: {e.description}") for e in DEFAULT_SCHEDULE]

ADD_KEYS_NOTE = (
    "Saving makes the project's code-signing and upload key pairs and its download and upload "
    "areas, as manage.py make_project does; the code-signing private key stays on the server so "
    "that add_app_version can sign app files. A project whose apps are signed offline (private "
    "key never stored) is created with manage.py make_project SLUG --name NAME "
    "--offline-code-signing instead."
)


class ProjectAdminForm(forms.ModelForm):
    paused_daemons = forms.MultipleChoiceField(
        choices=DAEMON_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Periodic tasks checked here skip this project until unchecked (run_daemons too).",
    )

    class Meta:
        model = Project
        fields = ["paused_daemons"]  # the admin adds the fieldsets' fields


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectAdminForm
    actions = ["pause_daemons", "resume_daemons"]
    list_display = ["slug", "name", "master_link", "locality_scheduling", "sched_stopped", "dashboard_link"]
    search_fields = ["slug", "name"]
    readonly_fields = [
        "create_time",
        "master_url",
        "scheduler_url",
        "code_sign_public_key",
        "upload_public_key",
    ]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "slug",
                    "name",
                    "description",
                    "base_url",
                    "create_time",
                    "master_url",
                    "scheduler_url",
                ]
            },
        ),
        (
            "Operations",
            {
                "fields": [
                    "sched_stopped",
                    "web_stopped",
                    "account_creation_disabled",
                    "min_passwd_length",
                    "min_core_client_version",
                    "paused_daemons",
                    "purge_min_age_days",
                ]
            },
        ),
        (
            "Scheduling",
            {
                "fields": [
                    "request_delay",
                    "next_rpc_delay",
                    "max_wus_to_send",
                    "max_wus_in_progress",
                    "max_wus_in_progress_gpu",
                    "gpu_multiplier",
                    "max_ncpus",
                    "max_ngpus",
                    "daily_result_quota",
                    "report_grace_period",
                    "resend_lost_results",
                    "one_result_per_user_per_wu",
                    "ignore_delay_bound",
                    "delete_delay_hours",
                ]
            },
        ),
        (
            "Reliable hosts and accelerated retries",
            {
                "fields": [
                    "reliable_max_avg_turnaround",
                    "reliable_max_error_rate",
                    "reliable_on_priority",
                    "reliable_reduced_delay_bound",
                    "reliable_priority_on_over",
                    "reliable_priority_on_over_except_error",
                    "batch_accel_fraction",
                ]
            },
        ),
        (
            "Locality scheduling",
            {
                "fields": [
                    "locality_scheduling",
                    "locality_scheduling_sorted_order",
                    "locality_scheduling_wait_period",
                    "locality_trigger_dir",
                    "locality_work_generator",
                ]
            },
        ),
        (
            "Credit (CreditNew)",
            {
                "fields": ["credit_by_app", "stats_export"],
            },
        ),
        (
            "Credit cheat bounds",
            {
                "description": (
                    "What a host that inflates its elapsed time or benchmarks can gain. The "
                    "defaults hold it to its own jobs: BOINC's caps of 10 for samples and host "
                    "scaling, app-version averages from the median of their hosts, and a cap on "
                    "claims not yet normalized by the host's own average."
                ),
                "fields": [
                    "credit_version_sample_cap",
                    "credit_host_sample_cap",
                    "credit_host_scale_max",
                    "credit_version_median",
                    "credit_claim_cap",
                ],
            },
        ),
        ("Work sequences", {"fields": ["sequence_max_disagreements"]}),
        (
            "Keys",
            {
                "classes": ["collapse"],
                "fields": [
                    "code_sign_public_key",
                    "code_sign_key_signature",
                    "upload_public_key",
                    "ignore_upload_certificates",
                ],
            },
        ),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Project | None = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        # The master URL attached clients use and var/data/<slug>/ are named after the slug:
        # changing it would leave both behind (the field's help text says so).
        return fields if obj is None else [*fields, "slug"]

    def get_fieldsets(self, request: HttpRequest, obj: Project | None = None) -> Any:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:
            return fieldsets
        (name, options), *rest = fieldsets
        return [(name, {**options, "description": ADD_KEYS_NOTE}), *rest]

    def save_model(self, request: HttpRequest, obj: Project, form: forms.ModelForm, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
        else:
            project_save_new(project=obj)  # the same key pairs and data areas as make_project

    @admin.action(description="Pause all periodic daemons of the selected projects", permissions=["change"])
    def pause_daemons(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        n = project_daemons_set_paused(
            project_ids=list(queryset.values_list("id", flat=True)),
            daemons=[name for name, _ in DAEMON_CHOICES],
            paused=True,
        )
        self.message_user(request, f"Periodic daemons paused for {n} project(s).", messages.SUCCESS)

    @admin.action(description="Resume all periodic daemons of the selected projects", permissions=["change"])
    def resume_daemons(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        n = project_daemons_set_paused(
            project_ids=list(queryset.values_list("id", flat=True)),
            daemons=[name for name, _ in DAEMON_CHOICES],
            paused=False,
        )
        self.message_user(request, f"Periodic daemons resumed for {n} project(s).", messages.SUCCESS)

    @admin.display(description="Master URL")
    def master_link(self, obj: Project) -> str:
        return format_html('<a href="{}">{}</a>', obj.master_url, obj.master_url)

    @admin.display(description="Status")
    def dashboard_link(self, obj: Project) -> str:
        return format_html(
            '<a href="{}">dashboard</a>', reverse("admin:projects_project_dashboard", args=[obj.pk])
        )

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path(
                "<int:pk>/dashboard/",
                self.admin_site.admin_view(project_dashboard_view),
                name="projects_project_dashboard",
            )
        ]
        return custom + super().get_urls()
