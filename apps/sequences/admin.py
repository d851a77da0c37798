"""The work-sequence admin: the changelist with progress, the actions calling the
services, and the "Add work sequence" form (create_work --sequence for people who prefer a browser)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince

from apps.applications.admin_fields import app_choices
from apps.core import clock
from apps.sequences import services as sequences
from apps.sequences.models import WorkSequence
from apps.sequences.services import SequenceSpec, sequence_create
from apps.sequences.services.hooks import EXTEND_BY
from apps.sequences.services.rows import steps_counted
from apps.sequences.services.waiting import sequence_wait
from apps.work.domain.states import SequenceState
from apps.work.models import Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, WorkError


class SequenceCreateForm(forms.Form):
    app = app_choices()
    name = forms.CharField(max_length=200, help_text="Steps are named NAME_s0, NAME_s1, ...")
    length = forms.IntegerField(
        min_value=1, required=False, help_text="Number of steps; empty for an open-ended sequence"
    )
    initial_steps = forms.IntegerField(min_value=1, initial=3, help_text="Open-ended: steps created now")
    max_result_time = forms.FloatField(
        min_value=1, initial=86400, help_text="Seconds of real time a host may take for one step"
    )
    restartable_every = forms.IntegerField(
        min_value=0, initial=0, help_text="Every K-th step uploads the full state (0: only the last)"
    )
    initial_state = forms.FileField(required=False, help_text="Optional input of the first step")
    initial_state_open_name = forms.CharField(max_length=254, initial="prev_state", required=False)
    state_open_name = forms.CharField(max_length=254, initial="state")
    state_max_nbytes = forms.IntegerField(min_value=1, initial=100_000_000)
    report_open_name = forms.CharField(
        max_length=254, initial="report", required=False, help_text="Empty: no report file"
    )
    report_max_nbytes = forms.IntegerField(min_value=1, initial=1_000_000)
    rsc_fpops_est = forms.FloatField(min_value=0, initial=3.6e12)
    rsc_fpops_bound = forms.FloatField(min_value=0, initial=8.64e13)
    delay_bound = forms.FloatField(
        min_value=1, required=False, help_text="Seconds; empty = 3 × max result time"
    )
    command_line = forms.CharField(max_length=1000, required=False)


def _spec(data: dict, first_inputs: tuple[InputSpec, ...]) -> SequenceSpec:
    outputs = [OutputSpec(data["state_open_name"], data["state_max_nbytes"], sequence_state=True)]
    if data["report_open_name"]:
        outputs.append(OutputSpec(data["report_open_name"], data["report_max_nbytes"]))
    return SequenceSpec(
        name=data["name"],
        job=JobSpec(
            outputs=tuple(outputs),
            command_line=data["command_line"],
            rsc_fpops_est=data["rsc_fpops_est"],
            rsc_fpops_bound=data["rsc_fpops_bound"],
            delay_bound=data["delay_bound"],
        ),
        first_inputs=first_inputs,
        max_result_time=data["max_result_time"],
        length=data["length"],
        initial_steps=data["initial_steps"],
        restartable_every=data["restartable_every"],
    )


def sequence_create_view(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:
    if not model_admin.has_add_permission(request):
        raise PermissionDenied
    form = SequenceCreateForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with tempfile.TemporaryDirectory() as scratch:
            first_inputs: tuple[InputSpec, ...] = ()
            upload = data["initial_state"]
            if upload is not None:
                path = Path(scratch) / Path(upload.name).name
                with path.open("wb") as out:
                    for chunk in upload.chunks():
                        out.write(chunk)
                first_inputs = (InputSpec(path=path, open_name=data["initial_state_open_name"] or path.name),)
            try:
                seq = sequence_create(
                    project=data["app"].project, app=data["app"], spec=_spec(data, first_inputs)
                )
            except WorkError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request, f"Created sequence {seq.name} with {seq.workunits.count()} step(s)."
                )
                # A login that may add but not see sequences goes to the index, as on Django's add pages.
                if model_admin.has_view_or_change_permission(request, seq):
                    return HttpResponseRedirect(reverse("admin:sequences_worksequence_change", args=[seq.pk]))
                return HttpResponseRedirect(reverse("admin:index"))
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Create a work sequence",
        "form": form,
        "opts": WorkSequence._meta,
    }
    return TemplateResponse(request, "admin/sequences/worksequence/create_sequence.html", context)


# A sequence may have thousands of steps; its page shows this many, the Workunits list all.
SEQUENCE_STEPS_SHOWN = 50
# Validated steps shown before the first unvalidated one.
SEQUENCE_STEPS_BEFORE = 5


def steps_shown(sequence: WorkSequence) -> QuerySet[Workunit]:
    """The steps around the sequence's progress point: from a few before the first
    unvalidated step (the last steps when all are validated), at most SEQUENCE_STEPS_SHOWN."""
    if sequence.first_unvalidated_id is not None:
        frontier = sequence.first_unvalidated.sequence_index or 0  # type: ignore[union-attr]  # set: its id is
        start = max(frontier - SEQUENCE_STEPS_BEFORE, 0)
    else:
        total = getattr(sequence, "n_steps", None)
        if total is None:
            total = sequence.workunits.count()
        start = max(total - SEQUENCE_STEPS_SHOWN, 0)
    steps = sequence.workunits.filter(sequence_index__gte=start).select_related("canonical_result")
    return steps.order_by("sequence_index")[:SEQUENCE_STEPS_SHOWN]


SEQUENCE_STARVATION_NOTE = (
    "A host that holds a sequence gets its next steps before any other work, so a project that "
    "mixes sequence and non-sequence work starves the non-sequence work on those hosts; the app's "
    "'max sequence job fraction' bounds it."
)


@admin.register(WorkSequence)
class WorkSequenceAdmin(admin.ModelAdmin):
    """Every field is the services' to change (through the actions): a hand-edited state,
    link or assignment would contradict the steps and the hosts."""

    list_display = [
        "name",
        "app",
        "state",
        "progress",
        "host",
        "since_progress",
        "max_result_time",
        "restartable_every",
        "n_relocations",
        "error_reason",
    ]
    list_filter = ["project", "app", "state"]
    search_fields = ["name"]
    ordering = ["-id"]  # the autocomplete pages through it
    list_select_related = ["app", "assigned_host", "first_unvalidated", "first_undispatched"]
    readonly_fields = fields = (
        "project",
        "app",
        "name",
        "state",
        "error_reason",
        "waiting",
        "progress",
        "expected_length",
        "max_result_time",
        "restartable_every",
        "head_workunit",
        "first_unvalidated",
        "first_undispatched",
        "checkpoint_result",
        "host",
        "assigned_time",
        "last_progress_time",
        "n_relocations",
        "n_disagreements",
        "relocated_from",
        "relocated_time",
        "replica_of",
        "ended_notified",
        "create_time",
        "all_steps",
        "steps",
    )
    show_full_result_count = False
    actions = ["deassign", "end", "extend", "refresh"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WorkSequence]:
        return steps_counted(super().get_queryset(request))

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict | None = None
    ) -> HttpResponse:
        return sequence_create_view(request, self)

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        # A help text under the title (templates/admin/sequences/worksequence/change_list.html): as
        # the page's subtitle it filled the window title and ran under the Add button.
        return super().changelist_view(
            request, {"sequence_note": SEQUENCE_STARVATION_NOTE, **(extra_context or {})}
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

    @admin.display(description="waiting for")
    def waiting(self, obj: WorkSequence) -> str:
        """Which chain, which checkpoint or step, and which host the sequence waits for."""
        wait = sequence_wait(head=obj, now=clock.now())
        return "-" if wait is None else wait.describe()

    @admin.display(description="assigned host", ordering="assigned_host")
    def host(self, obj: WorkSequence) -> object:
        """Only an ASSIGNED sequence has a host; an ended or failed one keeps the row only to
        tell its last host on its next request."""
        return obj.assigned_host if obj.state == SequenceState.ASSIGNED else "-"

    @admin.display(description="all steps")
    def all_steps(self, obj: WorkSequence) -> str:
        url = reverse("admin:work_workunit_changelist") + f"?sequence_id={obj.pk}"
        return format_html('<a href="{}">every step in the Workunits list</a>', url)

    @admin.display(
        description=f"steps (at most {SEQUENCE_STEPS_SHOWN}, from the progress point; 'all steps' lists every one)"
    )
    def steps(self, obj: WorkSequence) -> str:
        rows = format_html_join(
            "",
            '<tr><td>{}</td><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>',
            (
                (
                    wu.sequence_index,
                    reverse("admin:work_workunit_change", args=[wu.pk]),
                    wu.name,
                    "yes" if wu.restartable else "no",
                    wu.canonical_result or "-",
                    wu.error_mask,
                )
                for wu in steps_shown(obj)
            ),
        )
        return format_html(
            "<table><thead><tr><th>index</th><th>name</th><th>restartable</th><th>canonical result</th>"
            "<th>error mask</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

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
        description="End the selected sequences (their running steps are aborted)", permissions=["change"]
    )
    def end(self, request: HttpRequest, queryset: QuerySet[WorkSequence]) -> HttpResponse | None:
        ids = list(queryset.values_list("id", flat=True))
        running = sequences.sequence_running_steps(sequence_ids=ids)
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": "End work sequences?",
                "opts": self.model._meta,
                "sequences": queryset.select_related("app").order_by("name"),
                "running": running,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(request, "admin/sequences/worksequence/end_confirmation.html", context)
        n = sequences.sequence_end_many(sequence_ids=ids)
        self.message_user(
            request,
            f"{n} sequence(s) ended; {running} running step(s) will be aborted by their hosts on "
            "their next request.",
            messages.SUCCESS,
        )
        return None

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
