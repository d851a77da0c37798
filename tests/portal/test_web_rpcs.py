"""BOINC's XML web RPCs for statistics sites and tools: BOINC's elements for good input, its
error numbers (never an HTML page or a 500) for bad input."""

from __future__ import annotations

import pytest
from lxml import etree

from apps.work.domain.states import Outcome, ServerState, ValidateState
from tests.factories import (
    AccountFactory,
    AppFactory,
    AppVersionFactory,
    HostFactory,
    ProjectFactory,
    ResultFactory,
    TeamFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(slug="rpc")


@pytest.fixture
def team(project):
    founder = AccountFactory(
        project=project, name="Founder", email_addr="founder@example.com", total_credit=5
    )
    team = TeamFactory(project=project, name="Orbit Crunchers", founder=founder, total_credit=50)
    founder.team = team
    founder.save()
    AccountFactory(project=project, name="Member", email_addr="member@example.com", team=team, total_credit=0)
    return team


def xml(client, url: str) -> etree._Element:
    response = client.get(url)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/xml")
    return etree.fromstring(response.content)


def error_num(client, url: str) -> int:
    root = xml(client, url)
    assert root.tag == "error"
    return int(root.findtext("error_num"))


# --- team_lookup.php --------------------------------------------------------------------------


def test_team_lookup_by_id_gives_boincs_team_element(client, team):
    root = xml(client, f"/rpc/team_lookup.php?team_id={team.pk}")
    assert [e.tag for e in root] == [
        "id", "create_time", "userid", "name", "url", "type", "country",
        "total_credit", "expavg_credit", "expavg_time",
    ]  # fmt: skip
    assert (root.tag, root.findtext("name"), root.findtext("userid")) == (
        "team",
        "Orbit Crunchers",
        str(team.founder_id),
    )


def test_team_lookup_by_name_substring_lists_matching_teams(client, project, team):
    TeamFactory(project=project, name="Unrelated")
    root = xml(client, "/rpc/team_lookup.php?team_name=crunch&format=xml")
    assert root.tag == "teams"
    assert [t.findtext("name") for t in root] == ["Orbit Crunchers"]


def test_team_lookup_by_ids_leaves_out_unknown_and_malformed_ids(client, team):
    root = xml(client, f"/rpc/team_lookup.php?team_ids={team.pk},999999,abc")
    assert [t.findtext("id") for t in root] == [str(team.pk)]


def test_team_lookup_of_an_unknown_id_is_error_136(client, project):
    assert error_num(client, "/rpc/team_lookup.php?team_id=999999") == -136


@pytest.mark.parametrize("query", ["format=xml", "format=xml&team_name=", "team_id=x", "team_id=-5"])
def test_team_lookup_without_a_usable_parameter_is_error_1(client, project, query):
    assert error_num(client, f"/rpc/team_lookup.php?{query}") == -1


def test_team_lookup_without_format_is_a_search_page(client, team):
    body = client.get("/rpc/team_lookup.php?team_name=orbit").content.decode()
    assert f'team_display.php?teamid={team.pk}">Orbit Crunchers</a>' in body


# --- team_email_list.php and team_members_list.php -----------------------------------------


def test_team_email_list_lists_members_without_emails(client, team):
    root = xml(client, f"/rpc/team_email_list.php?xml=1&teamid={team.pk}")
    assert root.tag == "users"
    assert sorted(u.findtext("name") for u in root) == ["Founder", "Member"]
    assert b"@example.com" not in etree.tostring(root)


def test_team_email_list_creditonly_gives_members_with_credit_and_three_fields(client, team):
    root = xml(client, f"/rpc/team_email_list.php?xml=1&teamid={team.pk}&creditonly=1")
    [user] = root
    assert [e.tag for e in user] == ["id", "cpid", "total_credit"]


def test_team_email_list_of_an_unknown_team_is_error_136(client, project):
    assert error_num(client, "/rpc/team_email_list.php?xml=1&teamid=999999") == -136


def test_team_email_list_without_teamid_is_error_1(client, project):
    assert error_num(client, "/rpc/team_email_list.php?xml=1") == -1


def test_team_members_list_gives_emails_to_the_founder(client, team):
    root = xml(
        client, f"/rpc/team_members_list.php?teamid={team.pk}&account_key={team.founder.authenticator}"
    )
    assert sorted(u.findtext("email_addr") for u in root) == ["founder@example.com", "member@example.com"]


def test_team_members_list_gives_no_emails_to_another_member(client, team):
    member = team.members.get(name="Member")
    root = xml(client, f"/rpc/team_members_list.php?teamid={team.pk}&account_key={member.authenticator}")
    assert len(root) == 2
    assert root.find("user/email_addr") is None


def test_team_members_list_with_a_wrong_key_is_error_136(client, team):
    assert error_num(client, f"/rpc/team_members_list.php?teamid={team.pk}&account_key=wrong") == -136


def test_team_members_list_is_kept_by_no_cache(client, team):
    response = client.get(
        f"/rpc/team_members_list.php?teamid={team.pk}&account_key={team.founder.authenticator}"
    )
    assert "no-store" in response["Cache-Control"]


# --- show_user.php ----------------------------------------------------------------------------


def test_show_user_by_key_gives_the_owners_record_with_computers(client, project):
    account = AccountFactory(project=project, name="Owner", venue="home")
    host = HostFactory(account=account, domain_name="laptop", venue="work")
    response = client.get(f"/rpc/show_user.php?format=xml&auth={account.authenticator}")
    root = etree.fromstring(response.content)
    assert [e.tag for e in root][:10] == [
        "id", "cpid", "create_time", "name", "total_credit", "expavg_credit", "expavg_time",
        "teamid", "has_profile", "venue",
    ]  # fmt: skip
    assert root.findtext("cpid") == account.public_cpid
    assert (root.findtext("host/id"), root.findtext("host/domain_name")) == (str(host.pk), "laptop")
    assert "no-store" in response["Cache-Control"]


def test_show_user_with_a_wrong_key_is_error_136(client, project):
    assert error_num(client, "/rpc/show_user.php?format=xml&auth=wrong") == -136


def test_show_user_by_an_unknown_id_is_error_136(client, project):
    assert error_num(client, "/rpc/show_user.php?format=xml&userid=999999") == -136


@pytest.mark.parametrize("query", ["format=xml", "format=xml&userid=abc", "format=xml&auth="])
def test_show_user_without_a_user_is_error_1(client, project, query):
    assert error_num(client, f"/rpc/show_user.php?{query}") == -1


def test_xml_rpcs_answer_183_while_the_web_site_is_stopped(client, project, team):
    project.web_stopped = True
    project.save()
    assert error_num(client, f"/rpc/team_lookup.php?team_id={team.pk}") == -183
    assert error_num(client, f"/rpc/show_user.php?format=xml&userid={team.founder_id}") == -183


# --- apps.php ---------------------------------------------------------------------------------


def test_apps_xml_lists_apps_with_their_newest_version_per_platform(client, project):
    app = AppFactory(project=project, name="sieve", user_friendly_name="Prime sieve", beta=True)
    AppVersionFactory(app=app, version_num=100)
    AppVersionFactory(app=app, version_num=102)
    AppVersionFactory(app=app, version_num=103, deprecated=True)
    root = xml(client, "/rpc/apps.php?xml=1")
    [application] = root.findall("application")
    assert root.tag == "app_versions"
    assert [e.tag for e in application][:4] == ["user_friendly_name", "name", "id", "beta"]
    [version] = application.findall("version")
    assert version.findtext("version_num") == "102"
    assert version.findtext("platform_short") == "x86_64-pc-linux-gnu"
    assert version.findtext("date").endswith(" UTC")


def test_apps_page_without_xml_is_the_project_home(client, project):
    response = client.get("/rpc/apps.php")
    assert (response.status_code, response["Location"]) == (302, "/rpc/")


# --- pending.php ------------------------------------------------------------------------------


def test_pending_credit_lists_results_awaiting_validation(client, project):
    account = AccountFactory(project=project)
    host = HostFactory(account=account)
    done = {"account": account, "host": host, "server_state": ServerState.OVER, "outcome": Outcome.SUCCESS}
    pending = ResultFactory(workunit__app__project=project, claimed_credit=7.5, **done)
    ResultFactory(
        workunit__app__project=project, validate_state=ValidateState.VALID, claimed_credit=9, **done
    )
    root = xml(client, f"/rpc/pending.php?format=xml&authenticator={account.authenticator}")
    assert root.tag == "pending_credit"
    assert [r.findtext("resultid") for r in root.findall("result")] == [str(pending.pk)]
    assert root.findtext("result/claimed_credit") == "7.5"
    assert [e.tag for e in root][-1] == "total_claimed_credit"
    assert root.findtext("total_claimed_credit") == "7.5"


def test_pending_credit_with_a_wrong_key_is_error_136(client, project):
    assert error_num(client, "/rpc/pending.php?format=xml&authenticator=wrong") == -136


def test_pending_credit_without_a_key_is_error_1(client, project):
    assert error_num(client, "/rpc/pending.php?format=xml") == -1
