"""The admin's "Add work sequence" form: create_work --sequence for people who prefer a browser."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.applications.models import App
from apps.work.admin_views import ProjectAppChoiceField
from apps.work.models import WorkSequence
from apps.work.services import InputSpec, JobSpec, OutputSpec, WorkError
from apps.work.services.sequences import SequenceSpec, sequence_create


class SequenceCreateForm(forms.Form):
    app = ProjectAppChoiceField(
        queryset=App.objects.select_related("project")
        .filter(deprecated=False)
        .order_by("project__slug", "name")
    )
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


def _spec(data: dict, first_inputs: tuple[InputSpec, ...]) -> SequenceSpec:  # type: ignore[type-arg]
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


def sequence_create_view(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:  # type: ignore[type-arg]
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
                    return HttpResponseRedirect(reverse("admin:work_worksequence_change", args=[seq.pk]))
                return HttpResponseRedirect(reverse("admin:index"))
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Create a work sequence",
        "form": form,
        "opts": WorkSequence._meta,
    }
    return TemplateResponse(request, "admin/work/worksequence/create_sequence.html", context)
