"""The public status page, ``/<slug>/server_status.php`` (BOINC's html/user/server_status.php).

HTML for people; ``?xml=1`` gives BOINC's XML export (apps.protocol.server_status) for the
sites that aggregate the status of many projects; ``?counts=1`` the job counts alone, not
cached, for remote submission clients (which POST it). Daemon states come from the DaemonRun
records of the periodic tasks: "running" if the daemon ran within a few of its periods.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from urllib.parse import urlsplit

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from apps.applications.models import App
from apps.core import clock
from apps.portal.selectors import ServerStatus, job_counts_get, server_status_get
from apps.projects.models import Project
from apps.protocol.server_status import AppTasks, DaemonState, ServerStatusDoc, render_server_status
from apps.protocol.submit_rpc import render_job_counts

# Status aggregators poll this; BOINC caches it for an hour. A minute keeps it cheap and fresh,
# here (the figures are kept that long) and in proxies (Cache-Control).
CACHE_SECONDS = 60
# A decimal integer (ASCII digits) that is not zero.
_NONZERO_INT = re.compile(r"[+-]?0*[1-9][0-9]*")


def _hours(seconds: float | None) -> float:
    """Hours rounded up to hundredths, as BOINC's ``ceil(x/3600*100)/100``: a task of a few
    seconds shows 0.01, not 0. x/36 is the same figure without the rounding of x/3600*100,
    which lifts an exact hundredth (252 s) to the next (0.08 h)."""
    hundredths = (seconds or 0.0) / 36
    return math.ceil(hundredths) / 100 if math.isfinite(hundredths) else hundredths / 100


def _daemon_states(status: ServerStatus) -> tuple[DaemonState, ...]:
    host = urlsplit(status.project.master_url).hostname or ""
    scheduler = DaemonState(host, "Scheduler", "disabled" if status.project.sched_stopped else "running")
    return (scheduler, *(DaemonState(host, d.name, d.state) for d in status.daemons))


def _daemon_rows(status: ServerStatus, daemons: tuple[DaemonState, ...]) -> list[tuple[DaemonState, str]]:
    """Each daemon of the HTML page with the words shown for its status.

    A daemon with no recorded run (a daily one, on a new project) has "Not yet run": "Not
    running" reads as a failure. The XML keeps BOINC's three words, which aggregators parse.
    """
    never_run = {d.name for d in status.daemons if d.last_run is None}
    return [
        (d, "Not yet run" if d.status == "not running" and d.command in never_run else d.status.capitalize())
        for d in daemons
    ]


def _document(status: ServerStatus, update_time: int) -> ServerStatusDoc:
    ids = dict(App.objects.filter(project=status.project).values_list("name", "id"))
    return ServerStatusDoc(
        update_time=update_time,
        daemons=_daemon_states(status),
        results_ready_to_send=status.results_ready_to_send,
        results_in_progress=status.results_in_progress,
        workunits_waiting_for_validation=status.workunits_waiting_validation,
        workunits_waiting_for_assimilation=status.workunits_waiting_assimilation,
        workunits_waiting_for_deletion=status.workunits_waiting_deletion,
        results_waiting_for_deletion=status.results_waiting_deletion,
        transitioner_backlog_hours=float(status.transitioner_backlog_hours),
        users_with_recent_credit=status.users_with_recent_credit,
        users_with_credit=status.users_with_credit,
        users_registered_in_past_24_hours=status.users_last_24h,
        hosts_with_recent_credit=status.hosts_with_recent_credit,
        hosts_with_credit=status.hosts_with_credit,
        hosts_registered_in_past_24_hours=status.hosts_last_24h,
        current_floating_point_speed=float(status.current_gflops),
        apps=tuple(
            AppTasks(
                id=ids.get(a.name, 0),
                name=a.name,
                unsent=a.unsent,
                in_progress=a.in_progress,
                avg_runtime=_hours(a.avg_runtime),
                min_runtime=_hours(a.min_runtime),
                max_runtime=_hours(a.max_runtime),
                users=a.users_last_24h,
            )
            for a in status.apps
        ),
    )


def _wants_xml(request: HttpRequest, name: str = "xml") -> bool:
    # BOINC reads get_int('xml', true): any non-zero number selects the XML export, anything
    # that is not a number the HTML page. Checked as text: int() refuses some digits that
    # isdigit() accepts ("²") and numbers past 4,300 digits.
    return _NONZERO_INT.fullmatch(request.GET.get(name, "")) is not None


def _cached_status(project: Project) -> tuple[datetime, ServerStatus]:
    """The status as computed at most CACHE_SECONDS ago, with the time it was computed.

    A public page that counts results and workunits: without this, each request (and each
    status aggregator's poll) reads those tables again. The key holds the project's creation
    time too, so a project re-created under a reused id never shows the old figures."""
    key = f"portal:server_status:{project.pk}:{project.create_time.timestamp()}"
    cached = cache.get(key)
    if cached is None:
        now = clock.now()
        cached = (now, server_status_get(project=project, now=now))
        cache.set(key, cached, CACHE_SECONDS)
    return cached


@csrf_exempt  # remote submission clients POST ?counts=1 and hold no CSRF token
@require_http_methods(["GET", "HEAD", "POST"])
def server_status(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    if _wants_xml(request, "counts"):
        response = HttpResponse(render_job_counts(job_counts_get(project=project)), "text/xml; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        return response
    if request.method == "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    now, status = _cached_status(project)
    doc = _document(status, int(now.timestamp()))
    if _wants_xml(request):
        response = HttpResponse(render_server_status(doc), content_type="text/xml; charset=utf-8")
    else:
        context = {
            "project": project,
            "status": status,
            "daemons": _daemon_rows(status, doc.daemons),
            "apps": status.apps,
            "now": now,
        }
        response = render(request, "portal/server_status.html", context)
    response["Cache-Control"] = f"public, max-age={CACHE_SECONDS}"
    return response
