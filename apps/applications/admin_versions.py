"""The admin's "Add app version" form: add_app_version for people who prefer a browser.

The files are uploaded through the form, copied into the project's download area and signed
with the project's code-signing key by ``app_version_add``, exactly as the command does; a
version without its main program is refused, and every refusal is the form's error message.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.applications.admin_fields import app_choices
from apps.applications.models import AppVersion
from apps.applications.services import AppError, AppFileSpec, app_version_add
from apps.projects.models import Platform

# The file's name is part of its download URL and of the name the client stores it under.
FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
INT32_MAX = 2**31 - 1


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Any number of files from one input (Django's documented pattern)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: object, initial: object = None) -> list[UploadedFile]:
        one = super().clean
        if isinstance(data, list | tuple):
            return [one(d, initial) for d in data]
        return [one(data, initial)] if data else []


class AppVersionAddForm(forms.Form):
    app = app_choices()
    platform = forms.ModelChoiceField(queryset=Platform.objects.filter(deprecated=False).order_by("name"))
    version_num = forms.IntegerField(min_value=1, max_value=INT32_MAX, help_text="e.g. 712 for 7.12")
    plan_class = forms.CharField(
        max_length=100,
        required=False,
        help_text="Empty for a plain CPU version; mt, cuda, opencl_nvidia_101, ... or one defined in Plan classes",
    )
    main_program = forms.FileField(help_text="The executable the client runs")
    other_files = MultipleFileField(required=False, help_text="Libraries and data files the program opens")
    api_version = forms.CharField(max_length=20, required=False)
    cmdline = forms.CharField(max_length=500, required=False, help_text="Arguments added to every job's")

    def clean(self) -> dict[str, object]:
        data = super().clean()
        assert data is not None  # forms.Form.clean returns cleaned_data
        uploads = [data.get("main_program"), *(data.get("other_files") or [])]
        for upload in uploads:
            if upload is not None and not FILE_NAME.match(Path(upload.name).name):
                self.add_error(
                    None,
                    f"{upload.name!r}: a file name is letters, digits, '.', '_', '+' and '-' "
                    "(it becomes part of its download URL)",
                )
        return data


def _stored(upload: UploadedFile, scratch: Path) -> AppFileSpec:
    path = scratch / Path(upload.name or "").name
    if path.exists():
        raise AppError(f"two files named {path.name!r}: each file of a version needs its own name")
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return AppFileSpec(path=path)


def app_version_add_view(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:
    if not model_admin.has_add_permission(request):
        raise PermissionDenied
    form = AppVersionAddForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        app = data["app"]
        with tempfile.TemporaryDirectory() as scratch:
            try:
                files = [_stored(u, Path(scratch)) for u in [data["main_program"], *data["other_files"]]]
                version = app_version_add(
                    project=app.project,
                    app_name=app.name,
                    version_num=data["version_num"],
                    platform_name=data["platform"].name,
                    files=files,
                    plan_class=data["plan_class"],
                    api_version=data["api_version"],
                    cmdline=data["cmdline"],
                )
            except AppError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(
                    request, f"Added {version} with {len(files)} file(s), signed and in the download area."
                )
                # As Django's own add page: to the list, or the index for a login that cannot see it.
                if model_admin.has_view_or_change_permission(request):
                    return HttpResponseRedirect(reverse("admin:applications_appversion_changelist"))
                return HttpResponseRedirect(reverse("admin:index"))
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Add app version",
        "form": form,
        "opts": AppVersion._meta,
    }
    return TemplateResponse(request, "admin/applications/appversion/add_version.html", context)
