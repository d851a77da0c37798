"""Admin for batches and submitters: the staff grant who may submit for which app, with
what share of the hosts, and follow every batch's progress."""

from __future__ import annotations

from django.contrib import admin

from apps.submit.models import Batch, JobFile, UserSubmit, UserSubmitApp


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "name",
        "owner",
        "app",
        "state",
        "njobs",
        "njobs_success",
        "nerror_jobs",
        "njobs_in_progress",
        "fraction_done",
        "est_completion_time",
        "credit_canonical",
        "create_time",
    ]
    list_filter = ["state", "project", "app"]
    list_select_related = ["owner", "app"]
    search_fields = ["name", "=id", "owner__name"]
    raw_id_fields = ["owner", "app", "project"]
    readonly_fields = [f.name for f in Batch._meta.fields if f.name not in ("expire_time", "description")]
    show_full_result_count = False

    def has_add_permission(self, request: object) -> bool:
        return False  # submitters create batches over the RPCs


class UserSubmitAppInline(admin.TabularInline):
    model = UserSubmitApp
    fk_name = "account"
    extra = 0
    raw_id_fields = ["app"]


@admin.register(UserSubmit)
class UserSubmitAdmin(admin.ModelAdmin):
    list_display = [
        "account",
        "quota",
        "submit_all",
        "manage_all",
        "max_jobs_in_progress",
        "logical_start_time",
    ]
    list_select_related = ["account"]
    search_fields = ["=account__id", "account__name", "account__email_addr"]
    raw_id_fields = ["account"]
    readonly_fields = ["logical_start_time"]


@admin.register(UserSubmitApp)
class UserSubmitAppAdmin(admin.ModelAdmin):
    list_display = ["account", "app", "manage"]
    list_select_related = ["account", "app"]
    raw_id_fields = ["account", "app"]


@admin.register(JobFile)
class JobFileAdmin(admin.ModelAdmin):
    list_display = ["id", "input_file", "create_time", "delete_time"]
    list_select_related = ["input_file"]
    raw_id_fields = ["input_file", "batches"]
    show_full_result_count = False
