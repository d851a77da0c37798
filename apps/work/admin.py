from datetime import datetime

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.timesince import timesince

from apps.core import clock
from apps.core.admin_base import indexed_search
from apps.projects.models import Project
from apps.work import services
from apps.work.domain.result_status import task_state_of, task_status_text
from apps.work.models import InputFile, OutputFile, Result, WorkSequence, Workunit, WorkunitFileRef
from apps.work.services import sequences
from apps.work.services.sequence_hooks import EXTEND_BY


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
    raw_id_fields = ["canonical_result", "sequence", "app_version"]
    show_full_result_count = False
    inlines = [WorkunitFileRefInline, ResultInline]
    actions = ["cancel"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Workunit], search_term: str
    ) -> tuple[QuerySet[Workunit], bool]:
        project_ids = list(Project.objects.values_list("id", flat=True))
        return indexed_search(queryset, search_term, numbers=("id", "batch"), project_ids=project_ids), False

    def get_urls(self):  # type: ignore[no-untyped-def]
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
class ResultAdmin(admin.ModelAdmin):
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


# A sequence may have thousands of steps; its page shows this many, the Workunits list all.
SEQUENCE_STEPS_SHOWN = 50
# Validated steps shown before the first unvalidated one.
SEQUENCE_STEPS_BEFORE = 5


class SequenceStepsFormSet(BaseInlineFormSet):
    """The steps around the sequence's progress point: from a few before the first
    unvalidated step (the last steps when all are validated), at most SEQUENCE_STEPS_SHOWN."""

    def get_queryset(self) -> QuerySet[Workunit]:
        if not hasattr(self, "_steps"):
            sequence = self.instance
            if sequence.pk is None:
                return super().get_queryset()
            if sequence.first_unvalidated_id is not None:
                frontier = sequence.first_unvalidated.sequence_index or 0
                start = max(frontier - SEQUENCE_STEPS_BEFORE, 0)
            else:
                total = getattr(sequence, "n_steps", None)
                if total is None:
                    total = sequence.workunits.count()
                start = max(total - SEQUENCE_STEPS_SHOWN, 0)
            steps = super().get_queryset().filter(sequence_index__gte=start)
            self._steps = steps.order_by("sequence_index")[:SEQUENCE_STEPS_SHOWN]
        return self._steps


class SequenceWorkunitInline(admin.TabularInline):
    model = Workunit
    fk_name = "sequence"
    formset = SequenceStepsFormSet
    verbose_name_plural = (
        f"steps (at most {SEQUENCE_STEPS_SHOWN}, from the progress point; 'all steps' lists every one)"
    )
    fields = ["sequence_index", "name", "restartable", "canonical_result", "error_mask"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["sequence_index"]

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # steps are added by extending the sequence


SEQUENCE_STARVATION_NOTE = (
    "A host that holds a sequence gets its next steps before any other work, so a project that "
    "mixes sequence and non-sequence work starves the non-sequence work on those hosts; the app's "
    "'max sequence job fraction' bounds it."
)


@admin.register(WorkSequence)
class WorkSequenceAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "app",
        "state",
        "progress",
        "assigned_host",
        "since_progress",
        "max_result_time",
        "restartable_every",
        "n_relocations",
    ]
    list_filter = ["project", "app", "state"]
    search_fields = ["name"]
    ordering = ["-id"]  # the autocomplete pages through it
    list_select_related = ["app", "assigned_host", "first_unvalidated", "first_undispatched"]
    raw_id_fields = ["assigned_host"]
    readonly_fields = [
        "project",
        "app",
        "name",
        "state",
        "progress",
        "expected_length",
        "head_workunit",
        "first_unvalidated",
        "first_undispatched",
        "checkpoint_result",
        "assigned_host",
        "assigned_time",
        "last_progress_time",
        "n_relocations",
        "relocated_from",
        "relocated_time",
        "replica_of",
        "ended_notified",
        "create_time",
        "all_steps",
    ]
    show_full_result_count = False
    inlines = [SequenceWorkunitInline]
    actions = ["deassign", "end", "extend", "refresh"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkSequence]:
        return super().get_queryset(request).annotate(n_steps=Count("workunits"))

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: dict | None = None):  # type: ignore[no-untyped-def, override]
        from apps.work.admin_sequences import sequence_create_view

        return sequence_create_view(request, self)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None):  # type: ignore[no-untyped-def, override]
        return super().changelist_view(
            request, {"subtitle": SEQUENCE_STARVATION_NOTE, **(extra_context or {})}
        )

    @admin.display(description="validated / dispatched / steps")
    def progress(self, obj: WorkSequence) -> str:
        total = getattr(obj, "n_steps", None)
        if total is None:
            total = obj.workunits.count()

        def upto(wu: Workunit | None) -> int:
            return total if wu is None else wu.sequence_index or 0

        length = (
            ""
            if obj.expected_length is None or obj.expected_length == total
            else f" of {obj.expected_length}"
        )
        return f"{upto(obj.first_unvalidated)} / {upto(obj.first_undispatched)} / {total}{length}"

    @admin.display(description="all steps")
    def all_steps(self, obj: WorkSequence) -> str:
        url = reverse("admin:work_workunit_changelist") + f"?sequence__id__exact={obj.pk}"
        return format_html('<a href="{}">every step in the Workunits list</a>', url)

    @admin.display(description="since last progress", ordering="last_progress_time")
    def since_progress(self, obj: WorkSequence) -> str:
        if obj.last_progress_time is None:
            return "-"
        return timesince(obj.last_progress_time, clock.now())

    @admin.action(description="Deassign (relocate from the last restartable state)", permissions=["change"])
    def deassign(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> None:
        n = sequences.sequence_deassign_many(sequence_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} sequence(s) deassigned; the next host restarts from the checkpoint.")

    @admin.action(
        description="End the selected sequences (hosts are told on their next request)",
        permissions=["change"],
    )
    def end(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> None:
        n = sequences.sequence_end_many(sequence_ids=list(queryset.values_list("id", flat=True)))
        self.message_user(request, f"{n} sequence(s) ended.", messages.SUCCESS)

    @admin.action(description=f"Extend open-ended sequences by {EXTEND_BY} steps", permissions=["change"])
    def extend(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> None:
        n = sum(
            sequences.sequence_extend(sequence_id=i, n_steps=EXTEND_BY)
            for i in queryset.filter(expected_length__isnull=True).values_list("id", flat=True)
        )
        self.message_user(request, f"{n} step(s) added.", messages.SUCCESS)

    @admin.action(
        description="Refresh progress now (as the sequence-deadline daemon does)", permissions=["change"]
    )
    def refresh(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> None:
        now = clock.now()
        n = sum(
            sequences.sequence_refresh(sequence_id=i, now=now) for i in queryset.values_list("id", flat=True)
        )
        self.message_user(request, f"{n} sequence(s) changed.", messages.SUCCESS)
