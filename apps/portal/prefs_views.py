"""Computing preferences with BOINC's names: prefs.php (show), prefs_edit.php (edit the
primary set or a venue's), prefs_remove.php (drop a venue) and host_venue_action.php (a
computer's location). Saved preferences reach every computer of the account at its next
scheduler request (apps.scheduler.services.prefs); project preferences stay on their own
page (prefs.php?subset=project).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from apps.core import clock
from apps.hosts.models import Host
from apps.portal.computing_prefs import ComputingPrefsForm, prefs_display
from apps.portal.volunteer_session import id_param, volunteer_required
from apps.projects.models import Project
from apps.protocol.global_prefs import VENUES
from apps.scheduler.services.prefs import account_global_prefs_get, account_global_prefs_set, host_venue_set
from apps.volunteers.models import Account
from apps.volunteers.services import VENUE_CHOICES, AccountEditError

SAVED = (
    "Your preferences are saved. Your computers use them from their next contact with the project "
    "(or at once with Update in the BOINC Manager)."
)


def _venue(request: HttpRequest) -> str:
    venue = (request.POST.get("venue") or request.GET.get("venue") or "").strip()
    if venue and venue not in VENUES:
        raise Http404("unknown venue")
    return venue


def _back(project: Project) -> HttpResponse:
    return redirect(reverse("volunteers:prefs", args=[project.slug]))


@volunteer_required
def prefs(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    if request.GET.get("subset") == "project":
        return redirect(reverse("account_prefs", kwargs={"slug": project.slug}))
    doc = account_global_prefs_get(account)
    context = {
        "project": project,
        "account": account,
        "mod_time": datetime.fromtimestamp(doc.mod_time, UTC) if doc.mod_time else None,
        "primary": prefs_display(doc.primary),
        "venues": [(name, prefs_display(p) if (p := doc.venue(name)) else None) for name in VENUES],
        "hosts": Host.objects.filter(account=account).order_by("id"),
        "venue_choices": VENUE_CHOICES,
    }
    return render(request, "portal/prefs/global.html", context)


@volunteer_required
def prefs_edit(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    venue = _venue(request)
    doc = account_global_prefs_get(account)
    current = (doc.venue(venue) or doc.primary) if venue else doc.primary
    form = ComputingPrefsForm(request.POST or None, prefs=current)
    if request.method == "POST" and form.is_valid():
        edited = form.prefs()
        new = doc.with_venue(venue, edited) if venue else replace(doc, primary=edited)
        account_global_prefs_set(account=account, prefs=new, now=clock.now())
        messages.success(request, SAVED)
        return _back(project)
    context = {
        "project": project,
        "form": form,
        "venue": venue,
        "adding": bool(venue) and not doc.venue(venue),
    }
    return render(request, "portal/prefs/edit.html", context)


@volunteer_required
def prefs_remove(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    venue = _venue(request)
    doc = account_global_prefs_get(account)
    if venue and doc.venue(venue):
        account_global_prefs_set(account=account, prefs=doc.with_venue(venue, None), now=clock.now())
        messages.success(
            request,
            f"The separate preferences for {venue} are removed; computers there use the primary ones.",
        )
    return _back(project)


@volunteer_required
def host_venue(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    host = get_object_or_404(Host, project=project, account=account, pk=id_param(request.POST.get("hostid")))
    try:
        host_venue_set(host=host, venue=request.POST.get("venue", ""))
    except AccountEditError as exc:
        messages.error(request, str(exc))
    else:
        where = host.venue or "no location"
        messages.success(
            request, f"Computer {host.pk} is at {where}; it uses those preferences from its next request."
        )
    if request.POST.get("next") == "host":
        return redirect(f"{reverse('volunteers:host', args=[project.slug])}?hostid={host.pk}")
    return _back(project)
