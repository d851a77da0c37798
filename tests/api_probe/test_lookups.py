"""What schemathesis found in the API's URLs: every path under a project's API answers JSON,
and a record is found by any name create_work accepts."""

import pytest

from apps.work.domain.states import SequenceState
from tests.factories import AppFactory, ProjectFactory, ResultFactory, WorkSequenceFactory, WorkunitFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def app():
    return AppFactory(project=ProjectFactory(slug="probe"), name="sim")


def test_a_workunit_named_with_a_dot_is_found(admin_client, app):
    WorkunitFactory(app=app, name="job.1")
    response = admin_client.get("/api/v1/projects/probe/workunits/job.1/")
    assert response.status_code == 200
    assert response.json()["name"] == "job.1"


def test_a_result_named_with_a_dot_is_found(admin_client, app):
    ResultFactory(workunit=WorkunitFactory(app=app, name="job.1"), name="job.1_0")
    response = admin_client.get("/api/v1/projects/probe/results/job.1_0/")
    assert response.status_code == 200
    assert response.json()["workunit"] == "job.1"


def test_a_sequence_named_with_a_dot_can_be_ended(admin_client, app):
    WorkSequenceFactory(app=app, name="run.a", state=SequenceState.UNASSIGNED)
    response = admin_client.post("/api/v1/projects/probe/sequences/run.a/end/")
    assert response.status_code == 200
    assert response.json()["state"] == "Ended"


@pytest.mark.parametrize("path", ["users", "hosts", "teams"])
def test_an_id_that_is_not_an_integer_is_a_json_404(client, app, path):
    response = client.get(f"/api/v1/projects/probe/{path}/0.5/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}
