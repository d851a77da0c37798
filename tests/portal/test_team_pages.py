"""The team pages: create, join, quit, and the founder's and members' founder transfer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail

from apps.volunteers.models import Account, Team
from tests.factories import AccountFactory, ProjectFactory, TeamFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(slug="tm")


@pytest.fixture
def ada(project):
    return AccountFactory(project=project, name="Ada", password=PASSWORD)


def test_a_volunteer_creates_a_team_and_lands_on_its_page(client, ada):
    log_in(client, ada)
    response = client.post("/tm/team_create.php", {"name": "Night owls", "type": "1"}, follow=True)
    team = Team.objects.get(name="Night owls")
    assert response.redirect_chain[-1][0] == f"/tm/team_display.php?teamid={team.id}"
    assert "You founded Night owls" in response.content.decode()
    assert Account.objects.get(pk=ada.pk).team_id == team.id


def test_a_taken_team_name_is_shown_on_the_form(client, project, ada):
    TeamFactory(project=project, name="Night owls")
    log_in(client, ada)
    response = client.post("/tm/team_create.php", {"name": "night OWLS", "type": "1"})
    assert "already exists" in response.content.decode()


def test_team_pages_need_a_log_in(client, project):
    response = client.get("/tm/team_create.php")
    assert response.status_code == 302
    assert response["Location"] == "/tm/account/"


def test_the_team_page_offers_a_visitor_logged_in_to_join(client, project, ada):
    team = TeamFactory(project=project)
    log_in(client, ada)
    assert 'id="join-team"' in client.get(f"/tm/team_display.php?teamid={team.id}").content.decode()


def test_join_is_a_post_and_then_quit(client, project, ada):
    team = TeamFactory(project=project, name="Crunchers")
    log_in(client, ada)
    client.get(f"/tm/team_join.php?teamid={team.id}")
    assert Account.objects.get(pk=ada.pk).team_id is None  # the GET only asks
    client.post("/tm/team_join.php", {"teamid": team.id})
    assert Account.objects.get(pk=ada.pk).team_id == team.id
    client.post("/tm/team_quit.php")
    assert Account.objects.get(pk=ada.pk).team_id is None


def test_joining_a_team_of_another_project_is_404(client, ada):
    log_in(client, ada)
    assert client.post("/tm/team_join.php", {"teamid": TeamFactory().id}).status_code == 404


@pytest.mark.parametrize("teamid", ["", "x", "1.5", "9" * 40])
def test_a_bad_team_id_is_404(client, ada, teamid):
    log_in(client, ada)
    assert client.post("/tm/team_join.php", {"teamid": teamid}).status_code == 404


def test_the_founder_hands_the_team_to_a_member(client, project, ada):
    team = TeamFactory(project=project, founder=ada)
    Account.objects.filter(pk=ada.pk).update(team=team)
    grace = AccountFactory(project=project, team=team, name="Grace")
    log_in(client, ada)
    client.post("/tm/team_change_founder.php", {"teamid": team.id, "userid": grace.id})
    assert Team.objects.get(pk=team.pk).founder_id == grace.id


def test_a_members_request_emails_the_founder_and_opens_the_takeover(client, project, ada, now):
    team = TeamFactory(project=project, founder=ada, name="Crunchers")
    grace = AccountFactory(project=project, team=team, password=PASSWORD)
    log_in(client, grace)
    client.post("/tm/team_founder_transfer.php", {"action": "request"})
    [message] = mail.outbox
    assert message.to == [ada.email_addr]
    assert f"/tm/team_change_founder.php?teamid={team.id}" in message.body
    assert Team.objects.get(pk=team.pk).ping_user_id == grace.id
    Team.objects.filter(pk=team.pk).update(ping_time=now - timedelta(days=61))
    client.post("/tm/team_founder_transfer.php", {"action": "takeover"})
    assert Team.objects.get(pk=team.pk).founder_id == grace.id


def test_the_founder_declines_and_the_asker_is_told(client, project, ada, now):
    team = TeamFactory(project=project, founder=ada)
    Account.objects.filter(pk=ada.pk).update(team=team)
    grace = AccountFactory(project=project, team=team)
    Team.objects.filter(pk=team.pk).update(ping_user=grace, ping_time=now)
    log_in(client, ada)
    client.post("/tm/team_change_founder.php", {"teamid": team.id, "action": "decline"})
    assert Team.objects.get(pk=team.pk).ping_user_id is None
    assert mail.outbox[-1].to == [grace.email_addr]
