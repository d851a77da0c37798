"""The XML face of the app-version scale export, under the project's master URL."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_safe

from apps.core import clock
from apps.credit.selectors import app_version_scales_export
from apps.projects.models import Project
from apps.protocol.scales_xml import render_scales_xml


@require_safe
def app_version_scales_xml(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    body = render_scales_xml(app_version_scales_export(project=project, now=clock.now()))
    return HttpResponse(body, content_type="text/xml; charset=utf-8")
