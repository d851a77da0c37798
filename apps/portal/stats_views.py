"""The db_dump files under each project's master URL: ``/<slug>/stats/<file>``."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_safe

from apps.portal.stats_export import STATS_FILES, stats_file_path
from apps.projects.models import Project


@require_safe
def stats_file(request: HttpRequest, slug: str, name: str) -> FileResponse:
    """Read-only and streamed; only the export's own file names are ever served."""
    project = get_object_or_404(Project, slug=slug)
    path = stats_file_path(project, name)
    if path is None:
        raise Http404("no such statistics file")
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise Http404("statistics not exported yet") from None
    # No Content-Encoding: the client downloads user.gz as a gzip file, as from BOINC.
    return FileResponse(handle, content_type=STATS_FILES[name])
