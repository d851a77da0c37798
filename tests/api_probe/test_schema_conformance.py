"""What schemathesis found where the OpenAPI schema at /api/schema/ disagrees with the answers:
each answer here is checked against the schema the project serves."""

import io
import json

import pytest
from django.core.management import call_command

from apps.work.domain.states import SequenceState
from tests.api_probe.openapi import response_errors
from tests.factories import (
    AccountFactory,
    AppFactory,
    ProjectFactory,
    TeamFactory,
    WorkSequenceFactory,
)

pytestmark = pytest.mark.django_db

API = "/api/v1/projects/{slug}"


@pytest.fixture
def schema(client):
    return client.get("/api/schema/?format=json").json()


@pytest.fixture
def app():
    return AppFactory(project=ProjectFactory(slug="probe"), name="sim")


def test_a_sequence_without_checkpoint_or_replica_conforms(admin_client, schema, app):
    WorkSequenceFactory(app=app, name="fresh")
    response = admin_client.get("/api/v1/projects/probe/sequences/fresh/")
    assert response.json()["checkpoint_result"] is None
    assert response_errors(schema, f"{API}/sequences/{{name}}/", "get", response) == []


def test_a_user_without_a_team_conforms(client, schema, app):
    account = AccountFactory(project=app.project, team=None)
    response = client.get(f"/api/v1/projects/probe/users/{account.id}/")
    assert response.json()["team"] is None
    assert response_errors(schema, f"{API}/users/{{id}}/", "get", response) == []


def test_a_team_without_a_founder_conforms(client, schema, app):
    team = TeamFactory(project=app.project, founder=None)
    response = client.get(f"/api/v1/projects/probe/teams/{team.id}/")
    assert response.json()["founder"] is None
    assert response_errors(schema, f"{API}/teams/{{id}}/", "get", response) == []


def test_created_workunits_conform(admin_client, schema, app):
    response = admin_client.post(
        "/api/v1/projects/probe/workunits/",
        data=json.dumps({"appname": "sim", "jobs": [{"name": "j1"}]}),
        content_type="application/json",
    )
    assert response.status_code == 201
    assert response_errors(schema, f"{API}/workunits/", "post", response) == []


def test_creating_workunits_takes_no_page_or_filter_parameters(schema):
    parameters = schema["paths"][f"{API}/workunits/"]["post"]["parameters"]
    assert [p["name"] for p in parameters] == ["slug"]


@pytest.mark.parametrize(
    ("path", "filters"),
    [
        (
            "workunits",
            {"app", "batch", "need_validate", "assimilate_state", "file_delete_state", "error_mask"},
        ),
        ("results", {"app", "workunit", "host", "server_state", "outcome", "validate_state", "client_state"}),
        ("sequences", {"state", "app"}),
    ],
)
def test_lists_document_their_filters(schema, path, filters):
    parameters = {p["name"] for p in schema["paths"][f"{API}/{path}/"]["get"]["parameters"]}
    assert filters <= parameters


@pytest.mark.parametrize("path", ["users", "hosts", "teams"])
def test_volunteer_ids_are_documented_as_integers(schema, path):
    parameters = schema["paths"][f"{API}/{path}/{{id}}/"]["get"]["parameters"]
    assert {p["name"]: p["schema"]["type"] for p in parameters}["id"] == "integer"


@pytest.mark.parametrize("path", ["users", "hosts", "teams"])
def test_volunteer_lists_document_sort_by(schema, path):
    parameters = {p["name"] for p in schema["paths"][f"{API}/{path}/"]["get"]["parameters"]}
    assert "sort_by" in parameters


def _post_json(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    ("path", "method", "call"),
    [
        ("/workunits/{name}/", "get", lambda c: c.get("/api/v1/projects/probe/workunits/ghost/")),
        ("/results/{name}/", "get", lambda c: c.get("/api/v1/projects/probe/results/ghost/")),
        ("/workunits/", "get", lambda c: c.get("/api/v1/projects/probe/workunits/?page=9")),
        ("/results/", "get", lambda c: c.get("/api/v1/projects/probe/results/?host=x")),
        ("/workunits/", "post", lambda c: _post_json(c, "/api/v1/projects/probe/workunits/", {})),
        ("/workunits/", "post", lambda c: _post_json(c, "/api/v1/projects/nowhere/workunits/", {})),
        ("/sequences/", "post", lambda c: _post_json(c, "/api/v1/projects/probe/sequences/", {})),
        ("/sequences/{name}/", "get", lambda c: c.get("/api/v1/projects/probe/sequences/ghost/")),
        ("/sequences/{name}/end/", "post", lambda c: c.post("/api/v1/projects/probe/sequences/ended/end/")),
        (
            "/sequences/{name}/deassign/",
            "post",
            lambda c: c.post("/api/v1/projects/probe/sequences/ended/deassign/"),
        ),
        (
            "/sequences/{name}/extend/",
            "post",
            lambda c: _post_json(c, "/api/v1/projects/probe/sequences/ended/extend/", {"steps": 1}),
        ),
        (
            "/sequences/{name}/extend/",
            "post",
            lambda c: _post_json(c, "/api/v1/projects/probe/sequences/ended/extend/", {}),
        ),
        ("/scheduler/", "post", lambda c: _post_json(c, "/api/v1/projects/probe/scheduler/", [])),
        ("/scheduler/", "post", lambda c: _post_json(c, "/api/v1/projects/nowhere/scheduler/", {})),
        ("/users/{id}/", "get", lambda c: c.get("/api/v1/projects/probe/users/999/")),
        ("/users/", "get", lambda c: c.get("/api/v1/projects/nowhere/users/")),
        ("/app_version_scales/", "get", lambda c: c.get("/api/v1/projects/nowhere/app_version_scales/")),
    ],
)
def test_error_answers_are_documented(admin_client, schema, app, path, method, call):
    WorkSequenceFactory(app=app, name="ended", state=SequenceState.ENDED)
    response = call(admin_client)
    assert 400 <= response.status_code < 500
    assert response_errors(schema, API + path, method, response) == []


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("/workunits/", "/api/v1/projects/probe/workunits/"),
        ("/sequences/{name}/", "/api/v1/projects/probe/sequences/x/"),
    ],
)
def test_refusing_a_visitor_is_documented(client, schema, app, path, url):
    response = client.get(url)
    assert response.status_code == 403
    assert response_errors(schema, API + path, "get", response) == []


def test_the_schema_generates_without_warnings_and_validates():
    # drf-spectacular warns where it had to guess (a view it could not introspect): each
    # guess is a place the published schema may lie to API clients.
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert out.getvalue().startswith("openapi:")
