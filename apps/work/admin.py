from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from apps.work import services
from apps.work.models import InputFile, OutputFile, Result, WorkSequence, Workunit, WorkunitFileRef


class ResultInline(admin.TabularInline):
    model = Result
    fields = [
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
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


class WorkunitFileRefInline(admin.TabularInline):
    model = WorkunitFileRef
    raw_id_fields = ["file"]
    extra = 0


@admin.register(Workunit)
class WorkunitAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "app",
        "batch",
        "priority",
        "need_validate",
        "canonical_result",
        "error_mask",
        "assimilate_state",
        "file_delete_state",
        "transition_time",
        "create_time",
    ]
    list_filter = ["project", "app", "assimilate_state", "file_delete_state", "need_validate"]
    search_fields = ["name", "=batch"]
    list_select_related = ["app", "canonical_result"]
    raw_id_fields = ["canonical_result", "sequence", "app_version"]
    date_hierarchy = "create_time"
    show_full_result_count = False
    inlines = [WorkunitFileRefInline, ResultInline]
    actions = ["cancel"]

    @admin.action(description="Cancel the selected workunits (unsent results are withdrawn, hosts abort)")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Workunit]) -> None:
        n = services.workunit_cancel(workunit_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} workunit(s) cancelled.", messages.SUCCESS)


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "app",
        "server_state",
        "outcome",
        "client_state",
        "validate_state",
        "host",
        "sent_time",
        "report_deadline",
        "elapsed_time",
        "claimed_credit",
        "granted_credit",
    ]
    list_filter = ["project", "app", "server_state", "outcome", "validate_state", "client_state"]
    search_fields = ["name", "=host__id"]
    list_select_related = ["app", "host"]
    raw_id_fields = ["workunit", "host", "account", "app_version"]
    date_hierarchy = "create_time"
    show_full_result_count = False


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
    raw_id_fields = ["result"]
    show_full_result_count = False


class SequenceWorkunitInline(admin.TabularInline):
    model = Workunit
    fk_name = "sequence"
    fields = ["sequence_index", "name", "restartable", "canonical_result", "error_mask"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["sequence_index"]


@admin.register(WorkSequence)
class WorkSequenceAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "app",
        "state",
        "assigned_host",
        "max_result_time",
        "restartable_every",
        "expected_length",
        "last_progress_time",
    ]
    list_filter = ["project", "app", "state"]
    search_fields = ["name"]
    list_select_related = ["app", "assigned_host"]
    raw_id_fields = [
        "head_workunit",
        "first_unvalidated",
        "first_undispatched",
        "assigned_host",
        "replica_of",
    ]
    inlines = [SequenceWorkunitInline]
    actions = ["deassign", "end"]

    @admin.action(description="Deassign (relocate from the last restartable state)")
    def deassign(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> None:
        n = services.sequence_deassign_many(sequence_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} sequence(s) deassigned.", messages.SUCCESS)

    @admin.action(description="End the selected sequences")
    def end(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> None:
        n = services.sequence_end_many(sequence_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} sequence(s) ended.", messages.SUCCESS)
