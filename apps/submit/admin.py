"""Admin for batches and submitters: the staff grant who may submit for which app, with
what share of the hosts, and follow every batch's progress."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from apps.submit.domain.states import BatchState
from apps.submit.models import Batch, JobFile, UserSubmit, UserSubmitApp
from apps.submit.services import batches as batch_services


class SubmitterFilter(admin.SimpleListFilter):
    """Owners among the submitters (not every account of the project)."""

    title = "owner"
    parameter_name = "owner"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        rows = UserSubmit.objects.select_related("account").order_by("account__name")
        return [(str(s.account_id), f"{s.account.name} ({s.account_id})") for s in rows]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Batch]) -> QuerySet[Batch]:
        value = self.value()
        return queryset.filter(owner_id=int(value)) if value and value.isdigit() else queryset


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
        "progress",
        "est_completion_time",
        "credit_canonical",
        "create_time",
    ]
    list_filter = ["state", "project", "app", SubmitterFilter]
    list_select_related = ["owner", "app"]
    search_fields = ["name", "=id", "owner__name"]
    raw_id_fields = ["owner", "app", "project"]
    readonly_fields = [f.name for f in Batch._meta.fields if f.name not in ("expire_time", "description")]
    show_full_result_count = False
    actions = ["abort", "retire"]

    def has_add_permission(self, request: object) -> bool:
        return False  # submitters create batches over the RPCs

    @admin.display(description="progress", ordering="fraction_done")
    def progress(self, batch: Batch) -> str:
        percent = f"{100 * batch.fraction_done:.0f} %"
        return format_html(
            '<progress max="1" value="{}">{}</progress> {}', batch.fraction_done, percent, percent
        )

    @admin.action(description="Abort (cancel every job; hosts abort their tasks)", permissions=["change"])
    def abort(self, request: HttpRequest, queryset: QuerySet[Batch]) -> None:
        done = 0
        for batch in queryset.exclude(state__in=[BatchState.ABORTED, BatchState.RETIRED]):
            batch_services.batch_abort(batch=batch)
            done += 1
        self.message_user(request, f"{done} batch(es) aborted.", messages.SUCCESS)

    @admin.action(description="Retire (cancel unsent jobs; delete the outputs)", permissions=["change"])
    def retire(self, request: HttpRequest, queryset: QuerySet[Batch]) -> None:
        done = 0
        for batch in queryset.exclude(state=BatchState.RETIRED).select_related("project"):
            batch_services.batch_retire(batch=batch)
            done += 1
        self.message_user(request, f"{done} batch(es) retired.", messages.SUCCESS)


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
