"""The operators' API under hostile or careless input: a JSON 400 or 404, nothing written."""

import base64
import json

import pytest

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.sequences.models import WorkSequence
from apps.work.models import InputFile, Result, Workunit
from apps.work.services import JobSpec, WorkError, workunits_create

pytestmark = pytest.mark.django_db

WORKUNITS = "/api/v1/projects/opsapi/workunits/"
SEQUENCES = "/api/v1/projects/opsapi/sequences/"


@pytest.fixture
def project():
    project = project_create(slug="opsapi", name="API").project
    app_create(project=project, name="sim")
    return project


def post(client, url, data):
    body = data if isinstance(data, str) else json.dumps(data)
    return client.post(url, data=body, content_type="application/json")


def job(**fields):
    return {"appname": "sim", "jobs": [{"name": "j", **fields}]}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def nothing_written():
    return not Workunit.objects.exists() and not Result.objects.exists() and not InputFile.objects.exists()


@pytest.mark.parametrize(
    "fields",
    [
        {"priority": 2**31},
        {"priority": -(2**31) - 1},
        {"priority": 10**20},
        {"batch": 2**32},
        {"max_error_results": 2**32},
        {"outputs": [{"open_name": "o", "max_nbytes": 2**63}]},
    ],
    ids=["priority-int32", "priority-negative", "priority-huge", "batch", "max-error-results", "max-nbytes"],
)
def test_integers_beyond_their_column_are_400(admin_client, project, fields):
    response = post(admin_client, WORKUNITS, job(**fields))
    assert response.status_code == 400
    assert set(response.json()["jobs"]["0"]) == {*fields}
    assert nothing_written()


def test_a_replication_that_would_write_billions_of_results_is_400(admin_client, project):
    response = post(
        admin_client, WORKUNITS, job(min_quorum=2**32, target_nresults=2**32, max_total_results=2**32)
    )
    assert response.status_code == 400
    assert set(response.json()["jobs"]["0"]) == {"min_quorum", "target_nresults", "max_total_results"}
    assert nothing_written()


def test_the_service_bounds_replication_for_every_caller(project):
    with pytest.raises(WorkError, match="target_nresults must be at most 1000"):
        workunits_create(
            project=project,
            app=project.apps.get(),
            jobs=[JobSpec(name="many", target_nresults=5000, max_total_results=5000)],
        )
    assert nothing_written()


@pytest.mark.parametrize(
    "name",
    ["n" * 254, "p_\u0001", "p_\ufffe", "..", "a%b", "back\\slash", ".hidden"],
    ids=["too-long", "control", "fffe", "dotdot", "percent", "backslash", "hidden"],
)
def test_workunit_names_that_cannot_be_file_names_are_400(admin_client, project, name):
    response = post(admin_client, WORKUNITS, job(name=name))
    assert response.status_code == 400
    assert nothing_written()


@pytest.mark.parametrize(
    "inputs",
    [
        [{"name": "in\u0001\n<x>", "content_base64": b64(b"x")}],
        [{"name": "ok.dat", "open_name": "../../../etc/x", "content_base64": b64(b"x")}],
    ],
    ids=["input-name", "open-name-traversal"],
)
def test_unsafe_input_names_are_400_and_write_no_file(admin_client, project, inputs):
    response = post(admin_client, WORKUNITS, job(inputs=inputs))
    assert response.status_code == 400
    assert nothing_written()
    assert not project.download_dir.exists() or not any(project.download_dir.iterdir())


def test_a_command_line_with_control_characters_is_400(admin_client, project):
    response = post(admin_client, WORKUNITS, job(command_line="--x \u001b[31m"))
    assert response.status_code == 400
    assert "command_line" in response.json()["error"]
    assert nothing_written()


def test_two_inputs_of_one_name_are_400_and_neither_content_is_lost_silently(admin_client, project):
    inputs = [{"name": "dd", "content_base64": b64(b"hi")}, {"name": "dd", "content_base64": b64(b"ho")}]
    response = post(admin_client, WORKUNITS, job(inputs=inputs))
    assert response.status_code == 400
    assert nothing_written()


def test_a_sequences_shared_input_and_initial_state_of_one_name_are_400(admin_client, project):
    body = {
        "name": "s",
        "appname": "sim",
        "max_result_time": 3600,
        "step": {"inputs": [{"name": "dd", "content_base64": b64(b"state")}]},
        "shared_inputs": [{"name": "dd", "content_base64": b64(b"shared")}],
        "outputs": [{"open_name": "st", "max_nbytes": 1000, "state": True}],
    }
    response = post(admin_client, SEQUENCES, body)
    assert response.status_code == 400
    assert "dd" in response.json()["error"]
    assert not WorkSequence.objects.exists()
    assert nothing_written()


@pytest.mark.parametrize(
    "fields",
    [{"length": 2**32 + 1}, {"initial_steps": 2**32}, {"restartable_every": 2**32 + 1}],
    ids=["length", "initial-steps", "restartable-every"],
)
def test_sequence_sizes_beyond_bounds_are_400(admin_client, project, fields):
    body = {
        "name": "s",
        "appname": "sim",
        "max_result_time": 3600,
        "step": {},
        "outputs": [{"open_name": "st", "max_nbytes": 1000, "state": True}],
        **fields,
    }
    response = post(admin_client, SEQUENCES, body)
    assert response.status_code == 400
    assert set(response.json()) == set(fields)
    assert not WorkSequence.objects.exists()


@pytest.mark.parametrize(
    "path", ["workunits/%00/", "results/%00/", "sequences/%00/", "workunits/a%01b/"], ids=str
)
def test_a_name_with_control_characters_is_a_json_404(admin_client, project, path):
    response = admin_client.get(f"/api/v1/projects/opsapi/{path}")
    assert response.status_code == 404
    assert "detail" in response.json()


def test_json_nested_too_deeply_is_a_json_400(admin_client, project):
    body = '{"appname": "sim", "jobs": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = post(admin_client, WORKUNITS, body)
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["detail"]
    assert nothing_written()


@pytest.mark.parametrize("version", ["%00", "%0d%0a", 'a"b'], ids=["nul", "crlf", "quote"])
def test_the_schemas_version_parameter_cannot_reach_a_header(client, version):
    response = client.get(f"/api/schema/?version={version}")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'inline; filename="Cobblestone API (v1).yaml"'
