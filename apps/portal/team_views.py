"""Team pages with BOINC's names: create, join, quit, edit, and founder transfer (the
founder's change of founder, a member's request and take-over). The team itself is shown
by team_display.php (apps.portal.volunteer_views)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from apps.core import clock
from apps.portal.volunteer_session import id_param, volunteer_required
from apps.projects.models import Project
from apps.volunteers.domain.founder import (
    founder_request_allowed,
    founder_takeover_allowed,
    founder_takeover_time,
)
from apps.volunteers.mail import volunteer_mail_send
from apps.volunteers.models import Account, Team
from apps.volunteers.services import (
    TeamError,
    TeamFields,
    team_create,
    team_founder_change,
    team_founder_decline,
    team_founder_request,
    team_founder_takeover,
    team_join,
    team_quit,
    team_update,
)


class TeamForm(forms.Form):
    name = forms.CharField(label="Team name", max_length=200)
    type = forms.TypedChoiceField(label="Type of team", choices=Team.TeamType.choices, coerce=int)
    url = forms.URLField(label="Team web site", required=False, assume_scheme="https")
    description = forms.CharField(
        label="Description", required=False, widget=forms.Textarea(attrs={"rows": 5})
    )
    country = forms.CharField(label="Country", max_length=100, required=False)
    joinable = forms.BooleanField(label="Accept new members?", required=False, initial=True)

    def fields_value(self) -> TeamFields:
        return TeamFields(**self.cleaned_data)


def _team_url(project: Project, team: Team) -> str:
    return f"{reverse('volunteers:team', args=[project.slug])}?teamid={team.pk}"


def _team_param(request: HttpRequest, project: Project) -> Team:
    teamid = id_param(request.POST.get("teamid") or request.GET.get("teamid"))
    return get_object_or_404(Team.objects.select_related("founder", "ping_user"), project=project, pk=teamid)


def _page(request: HttpRequest, project: Project, template: str, **context: object) -> HttpResponse:
    return render(request, f"portal/teams/{template}", {"project": project, **context})


def _done(request: HttpRequest, project: Project, team: Team, text: str) -> HttpResponseRedirect:
    messages.success(request, text)
    return redirect(_team_url(project, team))


@volunteer_required
def create(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = team_create(account=account, fields=form.fields_value())
        except TeamError as exc:
            form.add_error("name", str(exc))
        else:
            return _done(request, project, team, f"You founded {team.name} and are its first member.")
    return _page(request, project, "create.html", form=form, account=account)


@volunteer_required
def edit(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    team = _team_param(request, project)
    initial = {f: getattr(team, f) for f in ("name", "type", "url", "description", "country", "joinable")}
    form = TeamForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            team_update(team=team, by=account, fields=form.fields_value())
        except TeamError as exc:
            form.add_error(None, str(exc))
        else:
            return _done(request, project, team, "The team is updated.")
    return _page(request, project, "edit.html", form=form, team=team, account=account)


@volunteer_required
def join(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    team = _team_param(request, project)
    if request.method == "POST":
        try:
            team_join(account=account, team=team)
        except TeamError as exc:
            messages.error(request, str(exc))
        else:
            return _done(request, project, team, f"You joined {team.name}.")
    return _page(request, project, "join.html", team=team, account=account)


@volunteer_required
def quit_team(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    team = account.team
    if request.method == "POST" and team is not None:
        try:
            team_quit(account=account)
        except TeamError as exc:
            messages.error(request, str(exc))
        else:
            return _done(request, project, team, f"You left {team.name}.")
    return _page(request, project, "quit.html", team=team, account=account)


@volunteer_required
def change_founder(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    """The founder's page: hand the team to a member, or decline a member's request."""
    team = _team_param(request, project)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "decline":
                asker = team_founder_decline(team=team, by=account)
                volunteer_mail_send(
                    to=asker.email_addr,
                    subject=f"{project.name}: foundership of {team.name} declined",
                    body=f"The founder of {team.name} declined your request to become its founder.\n",
                )
                return _done(request, project, team, f"You declined the request of {asker.name}.")
            new = get_object_or_404(
                Account, project=project, team=team, pk=id_param(request.POST.get("userid"))
            )
            team_founder_change(team=team, by=account, new_founder=new)
            return _done(request, project, team, f"{new.name} is now the founder of {team.name}.")
        except TeamError as exc:
            messages.error(request, str(exc))
    members = team.members.exclude(pk=account.pk).order_by("name")
    return _page(request, project, "change_founder.html", team=team, account=account, members=members)


@volunteer_required
def founder_transfer(request: HttpRequest, project: Project, account: Account) -> HttpResponse:
    """A member's page: ask for foundership, or take the team once the founder was silent."""
    team = account.team
    if team is None:
        messages.error(request, "You must be a member of a team to ask for its foundership.")
        return redirect(reverse("account_home", kwargs={"slug": project.slug}))
    now = clock.now()
    if request.method == "POST":
        try:
            if request.POST.get("action") == "takeover":
                team_founder_takeover(account=account, now=now)
                return _done(request, project, team, f"You are now the founder of {team.name}.")
            if team_founder_request(account=account, now=now):
                return _done(request, project, team, "The team had no founder: you are now its founder.")
            _tell_founder(request, project, team, account)
            return _done(request, project, team, "The founder is told of your request by email.")
        except TeamError as exc:
            messages.error(request, str(exc))
    team.refresh_from_db()
    asked = team.ping_user_id == account.pk
    context = {
        "team": team,
        "account": account,
        "asked": asked,
        "takeover_time": founder_takeover_time(team.ping_time) if asked and team.ping_time else None,
        "may_take_over": asked and founder_takeover_allowed(ping_time=team.ping_time, now=now),
        "may_ask": not asked
        and team.founder_id != account.pk
        and founder_request_allowed(
            open_request=team.ping_user_id is not None, ping_time=team.ping_time, now=now
        ),
    }
    return _page(request, project, "founder_transfer.html", **context)


def _tell_founder(request: HttpRequest, project: Project, team: Team, asker: Account) -> None:
    founder = Account.objects.filter(pk=team.founder_id).first()  # type: ignore[misc]  # None: no founder
    if founder is None:
        return
    url = request.build_absolute_uri(
        f"{reverse('volunteers:team_change_founder', args=[project.slug])}?teamid={team.pk}"
    )
    volunteer_mail_send(
        to=founder.email_addr,
        subject=f"{project.name}: {asker.name} asks to become founder of {team.name}",
        body=(
            f"Team member {asker.name} has asked that you transfer foundership of {team.name}.\n"
            f"Grant or decline the request at\n{url}\n"
            f"If you do not answer within 60 days, {asker.name} will be allowed to become the team founder.\n"
        ),
    )
