"""The per-project locality pages of the admin (thin: a selector, then a template)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from apps.core import clock
from apps.locality.domain.choice import working_set_size
from apps.locality.models import LocalityFile
from apps.locality.selectors import active_host_count, locality_overview_get, project_target_nresults
from apps.projects.models import Project


def locality_index_view(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm("locality.view_localityfile"):
        raise PermissionDenied
    context = {
        **admin.site.each_context(request),
        "title": "Locality scheduling by project",
        "projects": Project.objects.filter(locality_scheduling=True).order_by("slug"),
        "opts": LocalityFile._meta,
    }
    return TemplateResponse(request, "admin/locality/index.html", context)


def locality_project_view(request: HttpRequest, pk: int) -> HttpResponse:
    if not request.user.has_perm("locality.view_localityfile"):
        raise PermissionDenied
    project = get_object_or_404(Project, pk=pk)
    target = working_set_size(
        active_host_count(project=project, now=clock.now()), project_target_nresults(project=project)
    )
    context = {
        **admin.site.each_context(request),
        "title": f"{project.name}: locality scheduling",
        "project": project,
        "overview": locality_overview_get(project=project, target_working_set=target),
        "opts": LocalityFile._meta,
    }
    return TemplateResponse(request, "admin/locality/project.html", context)
