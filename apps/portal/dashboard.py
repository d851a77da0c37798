"""The project dashboard in the admin: BOINC's server status, for one project."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from apps.core import clock
from apps.portal.selectors import server_status_get
from apps.projects.models import Project


def project_dashboard_view(request: HttpRequest, pk: int) -> HttpResponse:
    if not request.user.has_perm("projects.view_project"):
        raise PermissionDenied
    project = get_object_or_404(Project, pk=pk)
    context = {
        **admin.site.each_context(request),
        "title": f"{project.name}: status",
        "project": project,
        "status": server_status_get(project=project, now=clock.now()),
        "opts": Project._meta,
    }
    return TemplateResponse(request, "admin/projects/project/dashboard.html", context)
