"""Team services, as BOINC's team pages act (html/inc/team.inc, html/user/team_*_action.php).

A volunteer creates a team (and is its founder and first member), joins one (leaving the
previous one) or quits. Credit stays where it was earned: a team's totals count what its
members earned while members, as BOINC's. The founder hands the team to another member;
a member whose founder is silent asks for it and may take it after 60 days
(apps.volunteers.domain.founder). Every write touches only its own columns: the
validator writes the same rows' credit meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from apps.volunteers.domain.founder import founder_request_allowed, founder_takeover_allowed
from apps.volunteers.models import Account, Team

MAX_TEAM_NAME = Team._meta.get_field("name").max_length or 200


class TeamError(Exception):
    """Why a team action was refused, in words for the volunteer."""


@dataclass(frozen=True, slots=True)
class TeamFields:
    """What the founder sets on the team create and edit forms."""

    name: str
    type: int = Team.TeamType.CLUB
    url: str = ""
    description: str = ""
    country: str = ""
    joinable: bool = True


def _checked_name(project_id: int, name: str, *, exclude: int | None = None) -> str:
    name = " ".join(name.split())
    if not name:
        raise TeamError("Choose a team name.")
    if "<" in name or ">" in name:
        raise TeamError("A team name may not contain < or >.")
    if len(name) > MAX_TEAM_NAME:
        raise TeamError(f"A team name may have at most {MAX_TEAM_NAME} characters.")
    taken = Team.objects.filter(project_id=project_id, name__iexact=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if taken.exists():
        raise TeamError(f"A team named {name} already exists: choose another name.")
    return name


def team_create(*, account: Account, fields: TeamFields) -> Team:
    """A new team founded by ``account``, who leaves their team and joins it."""
    name = _checked_name(account.project_id, fields.name)
    try:
        with transaction.atomic():
            team = Team.objects.create(
                project_id=account.project_id,
                name=name,
                founder=account,
                type=fields.type,
                url=fields.url,
                description=fields.description,
                country=fields.country,
                joinable=fields.joinable,
            )
            _set_team(account, team)
    except IntegrityError:
        # Another volunteer took the name between the check and the insert.
        raise TeamError(f"A team named {name} already exists: choose another name.") from None
    return team


def team_update(*, team: Team, by: Account, fields: TeamFields) -> None:
    """The founder's edit of the team's name, kind, site, description, country, openness."""
    _require_founder(team, by)
    values = {
        "name": _checked_name(team.project_id, fields.name, exclude=team.pk),
        "type": fields.type,
        "url": fields.url,
        "description": fields.description,
        "country": fields.country,
        "joinable": fields.joinable,
    }
    try:
        with transaction.atomic():
            Team.objects.filter(pk=team.pk).update(**values)
    except IntegrityError:
        raise TeamError(f"A team named {values['name']} already exists: choose another name.") from None
    for field, value in values.items():
        setattr(team, field, value)


def team_joinable_named(*, project_id: int, name: str) -> Team | None:
    """The project's team called ``name`` if it takes new members, else None: how an account
    made with a team name (create_account.php) joins, under team_join's rule."""
    name = name.strip()
    if not name:
        return None
    return Team.objects.filter(project_id=project_id, name=name, joinable=True).first()


def team_join(*, account: Account, team: Team) -> None:
    """``account`` joins ``team`` (of its project), leaving the team it was in."""
    if team.project_id != account.project_id:
        raise TeamError("That team belongs to another project.")
    if account.team_id == team.pk:
        raise TeamError(f"You are already a member of {team.name}.")
    if not team.joinable:
        raise TeamError(f"The team {team.name} does not accept new members.")
    with transaction.atomic():
        _leave(account)
        _set_team(account, team)


def team_quit(*, account: Account) -> None:
    """``account`` leaves its team; a founder stays founder (BOINC's), so members can ask
    for the team as from any absent founder."""
    if account.team_id is None:
        raise TeamError("You are not a member of a team.")
    with transaction.atomic():
        _leave(account)
        _set_team(account, None)


def team_founder_change(*, team: Team, by: Account, new_founder: Account) -> None:
    """The founder hands the team to a member; an open request is settled with it."""
    _require_founder(team, by)
    if new_founder.team_id != team.pk:
        raise TeamError(f"{new_founder.name} is not a member of {team.name}.")
    Team.objects.filter(pk=team.pk).update(founder=new_founder, ping_user=None)
    team.founder, team.ping_user = new_founder, None


def team_founder_decline(*, team: Team, by: Account) -> Account:
    """The founder turns down the open request; returns who had asked. The request's time
    is kept, so no new request comes for 60 days."""
    _require_founder(team, by)
    asker = team.ping_user
    if asker is None:
        raise TeamError("There is no request for foundership to decline.")
    Team.objects.filter(pk=team.pk).update(ping_user=None)
    team.ping_user = None
    return asker


def team_founder_request(*, account: Account, now: datetime) -> bool:
    """A member asks for foundership. Returns True when the team had no founder and the
    member is now its founder; False when the request is open for the founder to answer."""
    team = _own_team(account)
    if team.founder_id is None:
        Team.objects.filter(pk=team.pk).update(founder=account, ping_user=None, ping_time=None)
        return True
    if team.founder_id == account.pk:
        raise TeamError("You are the founder of this team already.")
    if team.ping_user_id == account.pk:
        raise TeamError("You have asked for foundership already.")
    if not founder_request_allowed(
        open_request=team.ping_user_id is not None, ping_time=team.ping_time, now=now
    ):
        raise TeamError("Foundership was asked for recently; a new request is not allowed yet.")
    Team.objects.filter(pk=team.pk).update(ping_user=account, ping_time=now)
    return False


def team_founder_takeover(*, account: Account, now: datetime) -> None:
    """The member who asked becomes founder, once the founder has been silent 60 days."""
    team = _own_team(account)
    if team.ping_user_id != account.pk or not founder_takeover_allowed(ping_time=team.ping_time, now=now):
        raise TeamError("You may not take over this team now.")
    Team.objects.filter(pk=team.pk).update(founder=account, ping_user=None, ping_time=None)


def _own_team(account: Account) -> Team:
    team = Team.objects.filter(pk=account.team_id).first() if account.team_id else None
    if team is None:
        raise TeamError("You must be a member of a team to do this.")
    return team


def _require_founder(team: Team, account: Account) -> None:
    if team.founder_id != account.pk:
        raise TeamError(f"Only the founder of {team.name} may do this.")


def _leave(account: Account) -> None:
    """Withdraw the member's open foundership request of the team it leaves."""
    if account.team_id is not None:
        Team.objects.filter(pk=account.team_id, ping_user=account).update(ping_user=None)


def _set_team(account: Account, team: Team | None) -> None:
    Account.objects.filter(pk=account.pk).update(team=team)
    account.team = team
