"""Public pages: the portal home and each project's home page (its BOINC master URL)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from apps.applications.models import App
from apps.portal.stats_export import STATS_FILES, stats_dir
from apps.projects.models import Project


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "portal/home.html", {"projects": Project.objects.all()})


def project_home(request: HttpRequest, slug: str) -> HttpResponse:
    """The master URL page: the BOINC client scrapes the scheduler URL from it."""
    project = get_object_or_404(Project, slug=slug)
    apps = App.objects.filter(project=project, deprecated=False).prefetch_related("versions__platform")
    # Linked only once written: the daily export makes them, and a new project has none yet.
    folder = stats_dir(project)
    exported = {name for name in STATS_FILES if (folder / name).is_file()}
    context = {"project": project, "apps": apps, "stats_files": exported}
    return render(request, "portal/project_home.html", context)
