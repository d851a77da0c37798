"""BOINC's XML web RPCs that statistics sites and tools read, with BOINC's element names and
error numbers: team_lookup.php, team_email_list.php?xml=1, team_members_list.php,
apps.php?xml=1, pending.php?format=xml and show_user.php?format=xml (by id, or by account
key with the account's computers).

A missing or malformed parameter answers -1, an unknown user, team or account key -136
(an unknown key counting as a failed log-in), a stopped web site -183: always BOINC's
``<error>`` document, never an HTML page.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from apps.hosts.models import Host
from apps.portal import volunteer_selectors as sel
from apps.portal.records import (
    app_record,
    owner_record,
    pending_credit_record,
    team_lookup_record,
    team_member_record,
    user_record,
)
from apps.portal.task_selectors import pending_claims
from apps.portal.task_states import TaskFilter
from apps.portal.volunteer_session import id_param, page_account
from apps.projects.models import Project
from apps.protocol import WebRpcError
from apps.protocol.stats_xml import Record, render_record
from apps.scheduler.attach import int_param, key_attempt, query_param, required_param, web_rpc
from apps.volunteers.models import Account, Team
from apps.volunteers.services import AccountRpcError, account_by_key


def _open(project: Project) -> None:
    if project.web_stopped:
        raise AccountRpcError(WebRpcError.PROJECT_DOWN)


def _by_key(request: HttpRequest, project: Project, name: str) -> Account:
    """The account whose key is the parameter ``name``; a wrong key counts as a failed log-in."""
    authenticator = required_param(request, name)
    with key_attempt(request, authenticator):
        return account_by_key(project=project, authenticator=authenticator)


def _team(request: HttpRequest, project: Project, name: str) -> Team:
    team = Team.objects.filter(project=project, pk=int_param(name, required_param(request, name))).first()
    if team is None:
        raise AccountRpcError(WebRpcError.NOT_FOUND, "No such team")
    return team


def _list(tag: str, records: list[Record]) -> bytes:
    return render_record(Record(tag, (), tuple(records)))


@web_rpc
def team_lookup_xml(request: HttpRequest, project: Project) -> bytes:
    """One team by ``team_id``; up to 100 by ``team_ids`` (a comma list, unknown ids left out)
    or by a part of their name (``team_name``), most recent credit first."""
    _open(project)
    if query_param(request, "team_id"):
        return render_record(team_lookup_record(_team(request, project, "team_id")))
    team_ids = query_param(request, "team_ids")
    if team_ids:
        ids = [int(part) for part in team_ids.split(",") if part.strip().isdigit() and len(part.strip()) < 19]
        teams = sel.teams_with_ids(project, ids)
    else:
        teams = sel.teams_named(project, required_param(request, "team_name").strip())
    return _list("teams", [team_lookup_record(t) for t in teams])


def _team_members(request: HttpRequest, project: Project, *, founder_key: bool) -> bytes:
    _open(project)
    team = _team(request, project, "teamid")
    emails = False
    if founder_key and query_param(request, "account_key") is not None:
        emails = _by_key(request, project, "account_key").pk == team.founder_id
    credit_only = query_param(request, "creditonly") not in (None, "", "0")
    members = sel.team_members(team)
    if credit_only:
        members = members.filter(total_credit__gt=0)
    return _list("users", [team_member_record(a, credit_only=credit_only, email=emails) for a in members])


@web_rpc
def team_email_list_xml(request: HttpRequest, project: Project) -> bytes:
    """The team's members (``teamid``); ``creditonly=1`` gives only those with credit, and
    only their id, cpid and total credit. No email addresses."""
    return _team_members(request, project, founder_key=False)


@web_rpc
def team_members_list(request: HttpRequest, project: Project) -> bytes:
    """team_email_list.php's list; with the founder's ``account_key``, each member's email
    address too (another member's key, or none, gives the list without them)."""
    return _team_members(request, project, founder_key=True)


@web_rpc
def apps_xml(request: HttpRequest, project: Project) -> bytes:
    """The project's applications and the newest version per platform and plan class."""
    _open(project)
    return _list(
        "app_versions", [app_record(app, versions) for app, versions in sel.apps_current_versions(project)]
    )


@web_rpc
def pending_xml(request: HttpRequest, project: Project) -> bytes:
    """The results of the account (``authenticator``) returned and awaiting validation."""
    _open(project)
    account = _by_key(request, project, "authenticator")
    return render_record(pending_credit_record(pending_claims(project=project, account=account)))


@web_rpc
def _show_user_xml(request: HttpRequest, project: Project) -> bytes:
    _open(project)
    if query_param(request, "auth") is not None:
        account = _by_key(request, project, "auth")
        hosts = Host.objects.filter(project=project, account=account).order_by("id")
        return render_record(owner_record(account, hosts))
    user = (
        Account.objects.select_related("team")
        .filter(
            project=project,
            pk=int_param("userid", required_param(request, "userid")),
            deleted_time__isnull=True,
        )
        .first()
    )
    if user is None:
        raise AccountRpcError(WebRpcError.NOT_FOUND)
    shown = list(user.hosts.order_by("-expavg_credit")) if user.show_hosts else []
    return render_record(user_record(user, shown))


def show_user_xml(request: HttpRequest, slug: str) -> HttpResponse:
    """show_user.php?format=xml: by ``userid`` the public record; by ``auth`` (the account
    key) the owner's, with every computer, kept by no cache."""
    response = _show_user_xml(request, slug)
    if "auth" in request.GET:
        add_never_cache_headers(response)
    return response


# --- the same page names for browsers --------------------------------------------------------


def _flag(request: HttpRequest, name: str) -> bool:
    """A PHP-style flag: present and neither empty nor 0."""
    return request.GET.get(name) not in (None, "", "0")


def team_lookup(request: HttpRequest, slug: str) -> HttpResponse:
    """team_lookup.php: XML for ``format=xml``, ``team_id`` or ``team_ids``; else a search page."""
    if request.GET.get("format") == "xml" or _flag(request, "team_id") or _flag(request, "team_ids"):
        return team_lookup_xml(request, slug)
    project = get_object_or_404(Project, slug=slug)
    name = (request.GET.get("team_name") or "").replace("\x00", "").strip()
    context = {
        "project": project,
        "name": name,
        "teams": sel.teams_named(project, name) if name else [],
        "max_teams": sel.RPC_MAX_TEAMS,
    }
    return render(request, "portal/volunteers/team_lookup.html", context)


def team_email_list(request: HttpRequest, slug: str) -> HttpResponse:
    """team_email_list.php: XML with ``xml=1``; else the team's page, which lists its members."""
    if _flag(request, "xml"):
        return team_email_list_xml(request, slug)
    project = get_object_or_404(Project, slug=slug)
    return redirect(
        f"{reverse('volunteers:team', args=[project.slug])}?teamid={id_param(request.GET.get('teamid'))}"
    )


def apps_page(request: HttpRequest, slug: str) -> HttpResponse:
    """apps.php: XML with ``xml=1``; else the project's home page, which lists the applications."""
    if _flag(request, "xml"):
        return apps_xml(request, slug)
    project = get_object_or_404(Project, slug=slug)
    return redirect("portal:project_home", slug=project.slug)


def pending(request: HttpRequest, slug: str) -> HttpResponse:
    """pending.php: XML with ``format=xml``; else the volunteer's tasks awaiting validation."""
    if request.GET.get("format") == "xml":
        return pending_xml(request, slug)
    project = get_object_or_404(Project, slug=slug)
    me = page_account(request, project)
    if me is None:
        return redirect("account_home", slug=project.slug)
    results = reverse("volunteers:results", args=[project.slug])
    return redirect(f"{results}?userid={me.pk}&state={int(TaskFilter.PENDING)}")
