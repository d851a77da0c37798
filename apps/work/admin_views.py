"""The admin's "Create work" form: create_work for people who prefer a browser."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.applications.admin_fields import app_choices, app_label
from apps.work.domain.assignments import target_from_options
from apps.work.models import Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, WorkError, workunits_create


class CreateWorkForm(forms.Form):
    app = app_choices()
    name_prefix = forms.CharField(max_length=100, help_text="Workunits are named PREFIX_0, PREFIX_1, ...")
    count = forms.IntegerField(min_value=1, max_value=10000, initial=1)
    input_file = forms.FileField(required=False, help_text="Optional input file shared by the jobs")
    input_open_name = forms.CharField(max_length=254, initial="in.txt", required=False)
    output_open_name = forms.CharField(max_length=254, initial="out.txt")
    output_max_nbytes = forms.IntegerField(min_value=1, initial=1_000_000)
    rsc_fpops_est = forms.FloatField(min_value=0, initial=3.6e12)
    rsc_fpops_bound = forms.FloatField(min_value=0, initial=8.64e13)
    delay_bound = forms.FloatField(min_value=1, required=False, help_text="Seconds; empty = the app's")
    min_quorum = forms.IntegerField(min_value=1, required=False)
    target_nresults = forms.IntegerField(min_value=1, required=False)
    priority = forms.IntegerField(initial=0)
    batch = forms.IntegerField(min_value=0, initial=0)
    command_line = forms.CharField(max_length=1000, required=False)
    target = forms.ChoiceField(
        choices=[
            ("", "any host (ordinary jobs)"),
            ("target_host", "only this host"),
            ("target_user", "only hosts of this user"),
            ("target_team", "only hosts of this team's members"),
            ("broadcast", "broadcast: every host, once"),
            ("broadcast_user", "broadcast: every host of this user, once"),
            ("broadcast_team", "broadcast: every host of this team's members, once"),
        ],
        required=False,
        help_text="BOINC's targeted and broadcast jobs",
    )
    target_id = forms.IntegerField(
        min_value=1, required=False, help_text="The host, user (account) or team id the target names"
    )

    def clean(self) -> dict:
        data = super().clean() or {}
        kind = data.get("target") or ""
        options: dict[str, object] = {}
        if kind == "broadcast":
            options["broadcast"] = True
        elif kind:
            if data.get("target_id") is None:
                self.add_error("target_id", "This target needs the id of its host, user or team.")
                return data
            options[kind] = data["target_id"]
        try:
            data["target_spec"] = target_from_options(options)
        except ValueError as exc:
            self.add_error("target_id", str(exc))
        return data


def create_work_view(request: HttpRequest) -> HttpResponse:
    # The page is only a creation form, so showing it needs add_ too, as Django's add pages do.
    if not request.user.has_perm("work.add_workunit"):
        raise PermissionDenied
    form = CreateWorkForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with tempfile.TemporaryDirectory() as scratch:
            inputs: tuple[InputSpec, ...] = ()
            upload = data["input_file"]
            if upload is not None:
                path = Path(scratch) / Path(upload.name).name
                with path.open("wb") as out:
                    for chunk in upload.chunks():
                        out.write(chunk)
                inputs = (InputSpec(path=path, open_name=data["input_open_name"] or path.name),)
            outputs = (OutputSpec(open_name=data["output_open_name"], max_nbytes=data["output_max_nbytes"]),)
            jobs = [
                JobSpec(
                    name=f"{data['name_prefix']}_{i}",
                    inputs=inputs,
                    outputs=outputs,
                    command_line=data["command_line"],
                    rsc_fpops_est=data["rsc_fpops_est"],
                    rsc_fpops_bound=data["rsc_fpops_bound"],
                    delay_bound=data["delay_bound"],
                    min_quorum=data["min_quorum"],
                    target_nresults=data["target_nresults"],
                    priority=data["priority"],
                    batch=data["batch"],
                    target=data.get("target_spec"),
                )
                for i in range(data["count"])
            ]
            try:
                created = workunits_create(project=data["app"].project, app=data["app"], jobs=jobs)
            except WorkError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Created {len(created)} workunit(s) for {app_label(data['app'])}.")
                return HttpResponseRedirect(_after_create(request))
    context = {
        **admin.site.each_context(request),
        "title": "Create work",
        "form": form,
        "opts": Workunit._meta,
    }
    return TemplateResponse(request, "admin/work/workunit/create_work.html", context)


def _after_create(request: HttpRequest) -> str:
    """The workunit list, or the admin index for a login that may add workunits but not see
    them (the list would answer 403), as Django's own add page does."""
    if request.user.has_perm("work.view_workunit") or request.user.has_perm("work.change_workunit"):
        return reverse("admin:work_workunit_changelist")
    return reverse("admin:index")
