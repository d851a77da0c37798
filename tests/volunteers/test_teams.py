"""Team create, join, quit and founder transfer, as BOINC's team pages act."""

from __future__ import annotations

from datetime import timedelta

import pytest

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
from tests.factories import AccountFactory, TeamFactory

pytestmark = pytest.mark.django_db


def reloaded(row):
    row.refresh_from_db()
    return row


@pytest.fixture
def team(db):
    founder = AccountFactory(name="Ada")
    t = TeamFactory(project=founder.project, name="Cobblers", founder=founder)
    Account.objects.filter(pk=founder.pk).update(team=t)
    return reloaded(t)


def member_of(team: Team, **kw) -> Account:
    return AccountFactory(project=team.project, team=team, **kw)


def test_creating_a_team_makes_its_creator_founder_and_member():
    account = AccountFactory()
    team = team_create(account=account, fields=TeamFields(name="  Night   owls "))
    assert (team.name, team.founder_id, reloaded(account).team_id) == ("Night owls", account.pk, team.pk)


def test_a_team_name_taken_in_another_case_is_refused(team):
    with pytest.raises(TeamError, match="already exists"):
        team_create(account=AccountFactory(project=team.project), fields=TeamFields(name="COBBLERS"))


def test_the_same_team_name_is_free_in_another_project(team):
    other = team_create(account=AccountFactory(), fields=TeamFields(name="Cobblers"))
    assert other.project_id != team.project_id


def test_a_team_name_with_markup_is_refused():
    with pytest.raises(TeamError, match="< or >"):
        team_create(account=AccountFactory(), fields=TeamFields(name="<b>bold</b>"))


def test_joining_moves_the_account_and_keeps_both_teams_credit(team):
    old = TeamFactory(project=team.project, total_credit=50.0)
    account = member_of(old, total_credit=50.0)
    team_join(account=account, team=team)
    assert reloaded(account).team_id == team.pk
    assert (reloaded(old).total_credit, reloaded(team).total_credit) == (50.0, 0.0)


def test_a_closed_team_cannot_be_joined(team):
    Team.objects.filter(pk=team.pk).update(joinable=False)
    with pytest.raises(TeamError, match="does not accept"):
        team_join(account=AccountFactory(project=team.project), team=reloaded(team))


def test_a_team_of_another_project_cannot_be_joined(team):
    with pytest.raises(TeamError, match="another project"):
        team_join(account=AccountFactory(), team=team)


def test_quitting_leaves_the_team_and_the_founder_stays_founder(team):
    founder = team.founder
    team_quit(account=founder)
    assert reloaded(founder).team_id is None
    assert reloaded(team).founder_id == founder.pk


def test_quitting_withdraws_the_members_foundership_request(team, now):
    member = member_of(team)
    team_founder_request(account=member, now=now)
    team_quit(account=member)
    assert reloaded(team).ping_user_id is None


def test_the_founder_hands_the_team_to_a_member(team):
    member = member_of(team)
    team_founder_change(team=team, by=team.founder, new_founder=member)
    assert reloaded(team).founder_id == member.pk


def test_the_founder_cannot_hand_the_team_to_an_outsider(team):
    with pytest.raises(TeamError, match="not a member"):
        team_founder_change(team=team, by=team.founder, new_founder=AccountFactory(project=team.project))


def test_only_the_founder_changes_the_founder(team):
    member = member_of(team)
    with pytest.raises(TeamError, match="Only the founder"):
        team_founder_change(team=team, by=member, new_founder=member)


def test_only_the_founder_edits_the_team(team):
    with pytest.raises(TeamError, match="Only the founder"):
        team_update(team=team, by=member_of(team), fields=TeamFields(name="Mine now"))


def test_a_request_is_open_until_60_days_pass_then_the_member_takes_over(team, now):
    member = member_of(team)
    assert team_founder_request(account=member, now=now) is False
    with pytest.raises(TeamError, match="may not take over"):
        team_founder_takeover(account=member, now=now + timedelta(days=59))
    team_founder_takeover(account=member, now=now + timedelta(days=61))
    assert reloaded(team).founder_id == member.pk


def test_a_team_without_founder_goes_to_the_first_member_who_asks(team, now):
    Team.objects.filter(pk=team.pk).update(founder=None)
    member = member_of(team)
    assert team_founder_request(account=member, now=now) is True
    assert reloaded(team).founder_id == member.pk


def test_a_second_member_may_not_ask_while_a_request_is_open(team, now):
    team_founder_request(account=member_of(team), now=now)
    with pytest.raises(TeamError, match="not allowed yet"):
        team_founder_request(account=member_of(team), now=now + timedelta(days=89))
    assert team_founder_request(account=member_of(team), now=now + timedelta(days=91)) is False


def test_a_declined_request_blocks_new_ones_for_60_days(team, now):
    asker = member_of(team)
    team_founder_request(account=asker, now=now)
    assert team_founder_decline(team=reloaded(team), by=team.founder).pk == asker.pk
    with pytest.raises(TeamError, match="not allowed yet"):
        team_founder_request(account=member_of(team), now=now + timedelta(days=30))
    with pytest.raises(TeamError, match="may not take over"):
        team_founder_takeover(account=asker, now=now + timedelta(days=61))
