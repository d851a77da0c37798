import base64

import pytest

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.work.domain.states import ServerState
from apps.work.models import InputFile, Result, Workunit

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    project = project_create(slug="opsapi", name="API").project
    app_create(project=project, name="sim", min_quorum=2, target_nresults=2)
    return project


def post(client, data):
    return client.post("/api/v1/projects/opsapi/workunits/", data=data, content_type="application/json")


def test_batch_endpoint_creates_jobs_with_results(admin_client, project):
    content = base64.b64encode(b"input data\n").decode()
    response = post(
        admin_client,
        {
            "appname": "sim",
            "jobs": [
                {
                    "name": "a",
                    "rsc_fpops_est": 1e12,
                    "rsc_fpops_bound": 1e14,
                    "inputs": [{"name": "a.in", "open_name": "in.txt", "content_base64": content}],
                },
                {
                    "name": "b",
                    "inputs": [{"name": "a.in", "open_name": "in.txt"}],
                    "outputs": [{"open_name": "out.txt", "max_nbytes": 5000}],
                },
            ],
        },
    )
    assert response.status_code == 201
    assert [w["name"] for w in response.json()] == ["a", "b"]
    assert Result.objects.filter(server_state=ServerState.UNSENT).count() == 4
    assert InputFile.objects.get().nbytes == 11


def test_batch_with_one_bad_job_creates_nothing(admin_client, project):
    response = post(
        admin_client,
        {
            "appname": "sim",
            "jobs": [{"name": "ok"}, {"name": "bad", "rsc_fpops_est": 1e13, "rsc_fpops_bound": 1e12}],
        },
    )
    assert response.status_code == 400
    assert "rsc_fpops_bound" in response.json()["error"]
    assert Workunit.objects.count() == 0


def test_batch_rejects_negative_numbers(admin_client, project):
    response = post(admin_client, {"appname": "sim", "jobs": [{"name": "x", "delay_bound": -1}]})
    assert response.status_code == 400
    assert Workunit.objects.count() == 0


def test_batch_with_unknown_app_is_400(admin_client, project):
    response = post(admin_client, {"appname": "ghost", "jobs": [{"name": "x"}]})
    assert response.status_code == 400


def test_batch_needs_an_admin(client, project):
    assert post(client, {"appname": "sim", "jobs": [{"name": "x"}]}).status_code in (401, 403)


def test_results_can_be_filtered_by_state(admin_client, project):
    post(admin_client, {"appname": "sim", "jobs": [{"name": "a"}]})
    body = admin_client.get("/api/v1/projects/opsapi/results/?server_state=2").json()
    assert body["count"] == 2
    assert {r["workunit"] for r in body["results"]} == {"a"}


def test_openapi_schema_documents_the_scheduler_and_batch_endpoints(admin_client):
    schema = admin_client.get("/api/schema/?format=json").json()
    assert "/api/v1/projects/{slug}/scheduler/" in schema["paths"]
    assert "post" in schema["paths"]["/api/v1/projects/{slug}/workunits/"]


def test_admin_create_work_form_creates_jobs(admin_client, project):
    app = project.apps.get()
    response = admin_client.post(
        "/admin/work/workunit/create-work/",
        {
            "app": app.pk,
            "name_prefix": "form",
            "count": 3,
            "input_open_name": "in.txt",
            "output_open_name": "out.txt",
            "output_max_nbytes": 1000,
            "rsc_fpops_est": 1e12,
            "rsc_fpops_bound": 1e13,
            "priority": 0,
            "batch": 4,
        },
    )
    assert response.status_code == 302
    assert sorted(Workunit.objects.values_list("name", "batch")) == [
        ("form_0", 4),
        ("form_1", 4),
        ("form_2", 4),
    ]


def test_admin_create_work_form_shows_service_errors(admin_client, project):
    app = project.apps.get()
    response = admin_client.post(
        "/admin/work/workunit/create-work/",
        {
            "app": app.pk,
            "name_prefix": "form",
            "count": 1,
            "output_open_name": "out.txt",
            "output_max_nbytes": 1,
            "rsc_fpops_est": 1e13,
            "rsc_fpops_bound": 1e12,
            "priority": 0,
            "batch": 0,
        },
    )
    assert response.status_code == 200
    assert "rsc_fpops_bound must be at least rsc_fpops_est" in response.content.decode()
    assert Workunit.objects.count() == 0
