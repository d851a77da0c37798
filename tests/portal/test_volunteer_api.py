"""The JSON twins of the volunteer pages in the operators' API, checked against the schema."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from apps.protocol.global_prefs import ComputingPrefs, GlobalPrefsDoc, render_global_prefs
from apps.work.domain.states import Outcome, ServerState, ValidateState
from tests.api_probe.openapi import response_errors
from tests.factories import (
    AccountFactory,
    AppVersionFactory,
    HostFactory,
    ProjectFactory,
    ResultFactory,
    TeamFactory,
)

pytestmark = pytest.mark.django_db

API = "/api/v1/projects/{slug}"


@pytest.fixture
def schema(client):
    return client.get("/api/schema/?format=json").json()


@pytest.fixture
def host(db):
    account = AccountFactory(project=ProjectFactory(slug="va"), total_credit=30.0)
    host = HostFactory(account=account)
    ResultFactory(
        workunit__app__project=account.project,
        host=host,
        account=account,
        server_state=ServerState.IN_PROGRESS,
    )
    ResultFactory(
        workunit__app__project=account.project,
        host=host,
        account=account,
        server_state=ServerState.OVER,
        outcome=Outcome.SUCCESS,
        validate_state=ValidateState.INIT,
    )
    return host


def staff(client, *codenames: str):
    user = get_user_model().objects.create_user(f"operator{len(codenames)}", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def test_an_accounts_pending_tasks_as_results_php_filters_them(admin_client, schema, host):
    response = admin_client.get(f"/api/v1/projects/va/tasks/?userid={host.account_id}&state=pending")
    [task] = response.json()["results"]
    assert (task["status"], task["credit"]) == ("Completed, waiting for validation", "pending")
    assert response_errors(schema, f"{API}/tasks/", "get", response) == []


def test_the_summary_counts_each_state_and_the_credit(admin_client, schema, host):
    response = admin_client.get(f"/api/v1/projects/va/tasks/summary/?hostid={host.id}")
    body = response.json()
    assert (body["counts"]["all"], body["counts"]["in_progress"], body["counts"]["pending"]) == (2, 1, 1)
    assert body["pending_credit"] > 0
    assert response_errors(schema, f"{API}/tasks/summary/", "get", response) == []


def test_one_task_is_result_php(admin_client, schema, host):
    task = host.results.first()
    response = admin_client.get(f"/api/v1/projects/va/tasks/{task.id}/")
    assert response.json()["name"] == task.name
    assert response_errors(schema, f"{API}/tasks/{{id}}/", "get", response) == []


@pytest.mark.parametrize("query", ["", "?userid=1&hostid=1", "?userid=abc"])
def test_the_task_list_needs_one_owner(admin_client, host, query):
    assert admin_client.get(f"/api/v1/projects/va/tasks/{query}").status_code == 400


def test_tasks_need_the_view_permission_on_results(client, host):
    url = f"/api/v1/projects/va/tasks/?hostid={host.id}"
    assert staff(client).get(url).status_code == 403
    client.logout()
    assert staff(client, "view_result").get(url).status_code == 200


def test_computing_preferences_with_their_venues(admin_client, schema, host):
    doc = GlobalPrefsDoc(mod_time=1_800_000_000).with_venue("work", ComputingPrefs(max_ncpus_pct=30))
    host.account.global_prefs = render_global_prefs(doc)
    host.account.save(update_fields=["global_prefs"])
    response = admin_client.get(f"/api/v1/projects/va/users/{host.account_id}/global_prefs/")
    body = response.json()
    assert (body["mod_time"], body["venues"]["work"]["max_ncpus_pct"]) == (1_800_000_000, 30)
    assert response_errors(schema, f"{API}/users/{{id}}/global_prefs/", "get", response) == []


def test_computing_preferences_are_not_public(client, host):
    assert client.get(f"/api/v1/projects/va/users/{host.account_id}/global_prefs/").status_code == 403


def test_a_teams_members_and_founder(client, schema, host):
    team = TeamFactory(project=host.project, founder=host.account)
    host.account.team = team
    host.account.save(update_fields=["team"])
    detail = client.get(f"/api/v1/projects/va/teams/{team.id}/")
    assert (detail.json()["founder_id"], detail.json()["nusers"], detail.json()["joinable"]) == (
        host.account_id,
        1,
        True,
    )
    members = client.get(f"/api/v1/projects/va/teams/{team.id}/members/")
    assert [m["id"] for m in members.json()["results"]] == [host.account_id]
    assert response_errors(schema, f"{API}/teams/{{id}}/members/", "get", members) == []


def test_teams_by_a_part_of_their_name_as_team_lookup_php(client, schema, host):
    TeamFactory(project=host.project, name="Orbit Crunchers")
    TeamFactory(project=host.project, name="Other")
    response = client.get("/api/v1/projects/va/teams/?name=CRUNCH")
    assert [t["name"] for t in response.json()["results"]] == ["Orbit Crunchers"]
    assert response_errors(schema, f"{API}/teams/", "get", response) == []


def test_apps_with_their_newest_versions_as_apps_php(client, schema, host):
    version = AppVersionFactory(app__project=host.project, app__name="sieve", version_num=101)
    AppVersionFactory(app=version.app, version_num=100)
    response = client.get("/api/v1/projects/va/apps/")
    apps = {a["name"]: a for a in response.json()}
    assert [v["version_num"] for v in apps["sieve"]["versions"]] == [101]
    assert response_errors(schema, f"{API}/apps/", "get", response) == []
