"""Volunteer pages with BOINC's names: show_user, show_host_detail, team_display, top lists.

Each page is server-rendered and small; ``?format=xml`` gives BOINC's XML record where
BOINC offers one (show_user.php, answered by apps.portal.web_rpcs; show_host_detail.php,
team_display.php).
"""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from apps.core.paging import KeysFirstPaginator
from apps.hosts.models import Host
from apps.portal import volunteer_selectors as sel
from apps.portal.charts import credit_chart_html
from apps.portal.records import host_record, team_record
from apps.portal.volunteer_session import page_account
from apps.portal.web_rpcs import show_user_xml
from apps.projects.models import Project
from apps.protocol.stats_xml import render_record
from apps.volunteers.models import Account, Team
from apps.volunteers.services import VENUE_CHOICES
from apps.volunteers.services.badges import account_badges, team_badges

PAGE_SIZE = 50
# The top lists show their first rows only: a page deep down would read and skip every row
# above it, and the count of a whole table would be taken on each view.
TOP_ROWS = 10_000
XML = "text/xml; charset=utf-8"


def _id(request: HttpRequest, name: str) -> int:
    try:
        return int(request.GET.get(name, ""))
    except ValueError:
        raise Http404(f"missing or bad {name}") from None


def _order(request: HttpRequest) -> str:
    return "total" if request.GET.get("sort_by") in ("total", "total_credit") else "recent"


def show_user(request: HttpRequest, slug: str) -> HttpResponse:
    if request.GET.get("format") == "xml":
        return show_user_xml(request, slug)
    project = get_object_or_404(Project, slug=slug)
    account = get_object_or_404(
        Account.objects.select_related("team"),
        project=project,
        id=_id(request, "userid"),
        deleted_time__isnull=True,
    )
    hosts = list(account.hosts.order_by("-expavg_credit")) if account.show_hosts else []
    history = sel.credit_history(account=account)
    return render(
        request,
        "portal/volunteers/user.html",
        {
            "project": project,
            "account": account,
            "hosts": hosts,
            "apps": sel.app_breakdown(account),
            "is_me": (me := page_account(request, project)) is not None and me.pk == account.pk,
            "chart": credit_chart_html(history, label=f"Total credit of {account.name}"),
            "badges": account_badges(account),
        },
    )


def show_host_detail(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    host = get_object_or_404(
        Host.objects.select_related("account"), project=project, id=_id(request, "hostid")
    )
    if request.GET.get("format") == "xml":
        return HttpResponse(render_record(host_record(host)), content_type=XML)
    return render(
        request,
        "portal/volunteers/host.html",
        {
            "project": project,
            "host": host,
            "coprocs": host.coprocs.all(),
            "versions": sel.host_version_stats(host, project),
            "owner": host.account if host.account.show_hosts else None,
            "is_mine": (me := page_account(request, project)) is not None and me.pk == host.account_id,
            "venue_choices": VENUE_CHOICES,
        },
    )


def team_display(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    team = get_object_or_404(
        Team.objects.select_related("founder"), project=project, id=_id(request, "teamid")
    )
    if request.GET.get("format") == "xml":
        return HttpResponse(render_record(team_record(team)), content_type=XML)
    members = Paginator(team.members.order_by("-expavg_credit", "id"), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    history = sel.credit_history(team=team)
    return render(
        request,
        "portal/volunteers/team.html",
        {
            "project": project,
            "team": team,
            "me": page_account(request, project),
            "nusers": team.members.count(),
            "members": members,
            "chart": credit_chart_html(history, label=f"Total credit of team {team.name}"),
            "badges": team_badges(team),
        },
    )


def _top(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=slug)
    order = _order(request)
    queryset = {"users": sel.top_accounts, "hosts": sel.top_hosts, "teams": sel.top_teams}[kind](
        project, order
    )
    page = KeysFirstPaginator(queryset, PAGE_SIZE, limit=TOP_ROWS).get_page(request.GET.get("page"))
    return render(
        request,
        f"portal/volunteers/top_{kind}.html",
        {
            "project": project,
            "page": page,
            "order": order,
            "rank_offset": page.start_index() - 1,
        },
    )


def top_users(request: HttpRequest, slug: str) -> HttpResponse:
    return _top(request, slug, "users")


def top_hosts(request: HttpRequest, slug: str) -> HttpResponse:
    return _top(request, slug, "hosts")


def top_teams(request: HttpRequest, slug: str) -> HttpResponse:
    return _top(request, slug, "teams")
