from datetime import datetime

from django.contrib import admin, messages
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import URLPattern

from apps.core.admin_base import RecordAdmin, indexed_search
from apps.core.admin_paging import LargeTableAdmin
from apps.projects.models import Project
from apps.work import services
from apps.work.domain.result_status import task_state_of, task_status_text
from apps.work.models import Assignment, InputFile, OutputFile, Result, Workunit, WorkunitFileRef


class ResultInline(admin.TabularInline):
    model = Result
    readonly_fields = fields = (
        "name",
        "server_state",
        "outcome",
        "client_state",
        "validate_state",
        "host",
        "sent_time",
        "received_time",
        "elapsed_time",
        "granted_credit",
    )
    extra = 0
    can_delete = False
    show_change_link = True


class WorkunitFileRefInline(admin.TabularInline):
    model = WorkunitFileRef
    raw_id_fields = ["file"]
    extra = 0


@admin.register(Workunit)
class WorkunitAdmin(LargeTableAdmin):
    list_display = [
        "name",
        "app",
        "batch",
        "priority",
        "need_validate",
        "canonical_result",
        "error_mask",
        "assimilate_state",
        "assimilate_attempts",
        "file_delete_state",
        "transition_time",
        "create_time",
    ]
    # No date_hierarchy: it reads every row's date on each page; the date filter reads none.
    list_filter = [
        "project",
        "app",
        "assimilate_state",
        ("assimilate_retry_time", admin.EmptyFieldListFilter),  # set: the hook failed (or runs)
        "file_delete_state",
        "need_validate",
        "create_time",
    ]
    # The retry time stays editable: emptying it retries at the next assimilator pass.
    readonly_fields = ["assimilate_attempts", "assimilate_error"]
    search_fields = ["name"]
    search_help_text = "The exact workunit name, or a number: workunit id or batch."
    list_select_related = ["app", "canonical_result"]
    raw_id_fields = ["canonical_result", "app_version"]
    show_full_result_count = False
    inlines = [WorkunitFileRefInline, ResultInline]
    actions = ["cancel"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Workunit], search_term: str
    ) -> tuple[QuerySet[Workunit], bool]:
        project_ids = list(Project.objects.values_list("id", flat=True))
        return indexed_search(queryset, search_term, numbers=("id", "batch"), project_ids=project_ids), False

    def get_urls(self) -> list[URLPattern]:
        from django.urls import path

        from apps.work.admin_views import create_work_view

        view = self.admin_site.admin_view(create_work_view)
        return [path("create-work/", view, name="work_workunit_create_work"), *super().get_urls()]

    @admin.action(
        description="Cancel the selected workunits (unsent results are withdrawn, hosts abort)",
        permissions=["change"],
    )
    def cancel(self, request: HttpRequest, queryset: QuerySet[Workunit]) -> None:
        n = services.workunit_cancel(workunit_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} workunit(s) cancelled.", messages.SUCCESS)


@admin.register(Result)
class ResultAdmin(LargeTableAdmin):
    # What an admin scans a list for; the four state fields, times and credit claims are
    # on each result's page (twelve columns do not fit a 1366-pixel screen beside the filters).
    list_display = ["name", "status", "app", "host", "sent", "reported", "granted_credit"]
    # No date_hierarchy: it reads every row's date on each page; the date filter reads none.
    list_filter = [
        "project",
        "app",
        "server_state",
        "outcome",
        "validate_state",
        "client_state",
        "create_time",
    ]
    search_fields = ["name"]
    search_help_text = (
        "The exact name of a result or of its workunit, or a number: result, host or workunit id."
    )
    list_select_related = ["app", "host"]
    raw_id_fields = ["workunit", "host", "account", "app_version"]
    show_full_result_count = False

    @admin.display(description="Sent", ordering="sent_time")
    def sent(self, obj: Result) -> str:
        return _short_time(obj.sent_time)

    @admin.display(description="Reported", ordering="received_time")
    def reported(self, obj: Result) -> str:
        return _short_time(obj.received_time)

    @admin.display(description="Status")
    def status(self, obj: Result) -> str:
        """BOINC's one phrase for the server state, outcome, validate and client states."""
        return task_status_text(task_state_of(obj))

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Result], search_term: str
    ) -> tuple[QuerySet[Result], bool]:
        project_ids = list(Project.objects.values_list("id", flat=True))
        # The workunit's ids first, so that the result condition is an indexed list.
        workunit_ids = list(
            Workunit.objects.filter(project_id__in=project_ids, name=search_term.strip()).values_list(
                "id", flat=True
            )
        )
        found = indexed_search(
            queryset,
            search_term,
            numbers=("id", "host_id", "workunit_id"),
            project_ids=project_ids,
            also=Q(workunit_id__in=workunit_ids) if workunit_ids else None,
        )
        return found, False


def _short_time(when: datetime | None) -> str:
    """A list's time in a narrow column: "2026-11-26 10:32" (UTC), or "-"."""
    return when.strftime("%Y-%m-%d %H:%M") if when is not None else "-"


@admin.register(InputFile)
class InputFileAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "nbytes", "md5_cksum", "sticky", "report_on_rpc", "file_delete_state"]
    list_filter = ["project", "sticky", "file_delete_state"]
    search_fields = ["name", "md5_cksum"]
    show_full_result_count = False


@admin.register(OutputFile)
class OutputFileAdmin(admin.ModelAdmin):
    list_display = ["name", "result", "max_nbytes", "nbytes", "uploaded", "upload", "upload_time"]
    list_filter = ["uploaded", "upload"]
    search_fields = ["name"]
    search_help_text = "The exact file name, or a number: file id or result id."
    raw_id_fields = ["result"]
    show_full_result_count = False

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[OutputFile], search_term: str
    ) -> tuple[QuerySet[OutputFile], bool]:
        return indexed_search(queryset, search_term, numbers=("id", "result_id")), False


@admin.register(Assignment)
class AssignmentAdmin(RecordAdmin):
    """Targeted and broadcast jobs (read-only: made by work creation and the import)."""

    list_display = ["workunit", "target_type", "target_id", "multi", "create_time"]
    list_filter = ["project", "target_type", "multi"]
    search_fields = ["=target_id"]
    search_help_text = "A host, account or team id."
    list_select_related = ["workunit"]
    raw_id_fields = ["workunit"]
    show_full_result_count = False
