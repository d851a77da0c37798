"""The scientist's round of test_submit_flow through the JSON API: create, upload, submit,
follow while simulated hosts run the jobs, download, retire; another submitter is refused."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.submit.models import Batch
from apps.work.models import Workunit
from apps.work.services.daemons import daemons_round
from tests.submit.client import md5_name
from tests.submit.hosts import SimHosts, output_of

pytestmark = pytest.mark.django_db

API = "/api/v1/projects/subm/submit"


def _auth(account) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Token {account.authenticator}"}


def _post(client, path: str, account, body: dict) -> object:
    return client.post(f"{API}/{path}", json.dumps(body), content_type="application/json", **_auth(account))


def test_a_batch_runs_and_its_outputs_download_through_the_json_api(client, project, app, alice, volunteers):
    created = _post(client, "batches/", alice, {"app": "cpuapp", "name": "json batch"})
    assert created.status_code == 201, created.content
    batch_id = created.json()["id"]

    contents = [f"input number {i}\n".encode() for i in range(2)]
    names = [md5_name(c) for c in contents]
    uploads = {n: SimpleUploadedFile(n, c) for n, c in zip(names, contents, strict=True)}
    uploaded = client.post(f"{API}/files/", {**uploads, "batch_id": batch_id}, **_auth(alice))
    assert uploaded.status_code == 201, uploaded.content
    assert _post(client, "files/query/", alice, {"names": names}).json() == {"absent": []}

    jobs = [
        {
            "name": f"job{i}",
            "command_line": f"--n {i}",
            "input_files": [{"mode": "local_staged", "source": names[i % 2]}],
        }
        for i in range(4)
    ]
    estimate = _post(client, "batches/estimate/", alice, {"app": "cpuapp", "jobs": jobs})
    assert estimate.json()["seconds"] > 0
    submitted = _post(client, f"batches/{batch_id}/jobs/", alice, {"jobs": jobs})
    assert submitted.status_code == 200, submitted.content
    assert (submitted.json()["state_name"], submitted.json()["njobs"]) == ("IN_PROGRESS", 4)

    hosts = SimHosts(client, project, volunteers, ask_seconds=4000)
    for _ in range(4):
        hosts.step()
        daemons_round(slug=project.slug)
    done = client.get(f"{API}/batches/{batch_id}/", **_auth(alice)).json()
    assert (done["state_name"], done["fraction_done"], done["njobs_success"]) == ("COMPLETE", 1.0, 4)
    statuses = client.get(f"{API}/batches/{batch_id}/jobs/", **_auth(alice)).json()["results"]
    assert [j["status"] for j in statuses] == ["done"] * 4

    output = client.get(f"{API}/results/job1_0/files/0/", **_auth(alice))
    assert b"".join(output.streaming_content) == output_of("job1_0")
    archive = client.get(f"{API}/batches/{batch_id}/outputs/", **_auth(alice))
    with zipfile.ZipFile(io.BytesIO(b"".join(archive.streaming_content))) as z:
        assert sorted(z.namelist()) == sorted(f"job{i}_0_0" for i in range(4))

    retired = _post(client, f"batches/{batch_id}/retire/", alice, {})
    assert retired.json()["state_name"] == "RETIRED"
    daemons_round(slug=project.slug)
    assert Batch.objects.get(id=batch_id).files_deleted


@pytest.fixture
def alices_batch(client, project, app, alice) -> int:
    jobs = [{"name": "a0", "input_files": [{"mode": "inline", "source": "x"}]}]
    batch_id = _post(client, "batches/", alice, {"app": "cpuapp"}).json()["id"]
    assert _post(client, f"batches/{batch_id}/jobs/", alice, {"jobs": jobs}).status_code == 200
    return batch_id


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "batches/{id}/"),
        ("get", "batches/{id}/jobs/"),
        ("post", "batches/{id}/abort/"),
        ("post", "batches/{id}/retire/"),
        ("get", "batches/{id}/outputs/"),
        ("get", "results/a0_0/files/0/"),
    ],
)
def test_another_submitters_batch_is_refused(client, alices_batch, bob, method, path):
    url = f"{API}/{path.format(id=alices_batch)}"
    response = getattr(client, method)(url, **_auth(bob))
    assert response.status_code == 403
    assert response.json() == {"error": "not owner of batch"}
    batch = Batch.objects.get(id=alices_batch)
    assert (batch.state, batch.completion_time) == (1, None)
    assert Workunit.objects.get(batch=alices_batch).error_mask == 0


def test_another_submitters_batch_takes_no_jobs(client, project, app, alice, bob):
    batch_id = _post(client, "batches/", alice, {"app": "cpuapp"}).json()["id"]
    response = _post(client, f"batches/{batch_id}/jobs/", bob, {"jobs": [{"name": "b0"}]})
    assert (response.status_code, response.json()) == (403, {"error": "not owner of batch"})
    assert not Workunit.objects.exists()


def test_a_wrong_key_is_refused(client, project, app, alice):
    response = client.get(f"{API}/batches/", HTTP_AUTHORIZATION="Token nonsense")
    assert response.status_code == 401
    assert response.json() == {"detail": "bad authenticator"}


def test_guessing_keys_is_refused_after_the_log_in_limit(client, project, alice, settings):
    settings.COBBLESTONE_RATELIMIT_LOGIN_IP = "3/15m"
    codes = [
        client.get(f"{API}/batches/", HTTP_AUTHORIZATION=f"Token guess{i}").status_code for i in range(4)
    ]
    assert codes == [401, 401, 401, 429]


def test_a_volunteer_who_is_not_a_submitter_is_refused(client, project, volunteers):
    response = client.get(f"{API}/batches/", **_auth(volunteers[0]))
    assert response.status_code == 401
    assert response.json() == {"detail": "this account may not submit jobs"}


def test_bad_job_input_writes_nothing(client, project, app, alice):
    response = _post(client, "batches/", alice, {"app": "nosuchapp"})
    assert (response.status_code, response.json()) == (400, {"error": "app not found: nosuchapp"})
    assert not Batch.objects.exists()


def test_the_schema_lists_the_submitters_api(client):
    paths = client.get("/api/schema/?format=json").json()["paths"]
    assert "/api/v1/projects/{slug}/submit/batches/{id}/abort/" in paths
    assert "/api/v1/projects/{slug}/submit/files/" in paths
