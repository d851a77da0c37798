"""Remote inputs (BOINC's mode remote): the submitter gives a URL, a size and an MD5; hosts
download the file from that URL, and the server never holds a copy."""

from __future__ import annotations

import hashlib

import pytest

from apps.submit.models import Batch
from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, Workunit
from apps.work.services.create import InputSpec as WorkInput
from apps.work.services.create import RemoteFile, input_file_stage
from tests.scheduler.conftest import make_request, rpc
from tests.submit.client import Job, RemoteInput, SubmitClient, md5_name

pytestmark = pytest.mark.django_db

DATA = b"a large input kept elsewhere\n"
MD5 = hashlib.md5(DATA).hexdigest()
URL = "https://data.example.org/inputs/set-7.bin"


def _submit(client, project, account, *files: RemoteInput | None) -> dict:
    inputs = [f or RemoteInput(URL, len(DATA), MD5) for f in files or (None,)]
    return SubmitClient(client, project.slug, account.authenticator).submit_batch(
        "cpuapp", [Job(name=f"r{i}", files=[f]) for i, f in enumerate(inputs)]
    )


def _error(reply: dict) -> str:
    assert set(reply) == {"error"}, reply
    return reply["error"]["error_msg"]


def test_a_host_is_told_to_download_a_remote_input_from_its_url(client, project, app, alice, volunteers):
    assert "batch_id" in _submit(client, project, alice)
    reply = rpc(client, project, make_request(volunteers[0].authenticator, cpu_req_secs=100.0))
    assert [r.name for r in reply.results] == ["r0_0"]
    (info,) = [f for f in reply.file_infos if f.name == md5_name(DATA)]
    assert (info.download_urls, info.md5_cksum, info.nbytes) == ((URL,), MD5, len(DATA))


def test_a_remote_input_is_not_written_to_the_download_area(client, project, app, alice):
    _submit(client, project, alice)
    row = InputFile.objects.get(name=md5_name(DATA))
    assert (row.remote_url, row.md5_cksum, row.nbytes) == (URL, MD5, len(DATA))
    assert not (project.download_dir / md5_name(DATA)).exists()


def test_jobs_naming_the_same_remote_file_share_one_row(client, project, app, alice):
    _submit(client, project, alice, None, None)
    assert Workunit.objects.count() == 2
    assert InputFile.objects.filter(name=md5_name(DATA)).count() == 1


def test_an_uppercase_md5_names_the_same_file(client, project, app, alice):
    assert "batch_id" in _submit(client, project, alice, RemoteInput(URL, len(DATA), MD5.upper()))
    assert InputFile.objects.get().name == md5_name(DATA)


@pytest.mark.parametrize(
    ("remote", "message"),
    [
        (
            RemoteInput("file:///etc/passwd", len(DATA), MD5),
            "job 0: remote input: bad URL 'file:///etc/passwd'",
        ),
        (RemoteInput("http://", len(DATA), MD5), "job 0: remote input: bad URL 'http://'"),
        (RemoteInput(URL, len(DATA), "../../etc"), "job 0: remote input: bad MD5 '../../etc'"),
        (RemoteInput(URL, 0, MD5), "job 0: remote input: nbytes must be between 1 and"),
        (RemoteInput(URL, 10.5, MD5), "job 0: remote input: nbytes must be a whole number"),
    ],
)
def test_a_remote_input_a_client_could_not_use_is_refused(client, project, app, alice, remote, message):
    assert _error(_submit(client, project, alice, remote)).startswith(message)
    assert not Batch.objects.exists()
    assert not InputFile.objects.exists()


def test_a_remote_input_of_another_size_than_the_known_file_is_refused(client, project, app, alice):
    _submit(client, project, alice)
    reply = _submit(client, project, alice, RemoteInput(URL, len(DATA) + 1, MD5))
    assert _error(reply).startswith(f"a different file named '{md5_name(DATA)}'")
    assert Workunit.objects.count() == 1


def test_one_md5_given_two_sizes_in_one_batch_is_refused(client, project, app, alice):
    reply = _submit(client, project, alice, None, RemoteInput(URL, len(DATA) + 1, MD5))
    assert _error(reply) == f"job 1: remote input: MD5 {MD5} was given with two sizes in this batch"
    assert not Batch.objects.exists()
    assert not InputFile.objects.exists()


def test_an_uploaded_copy_is_served_instead_of_the_url(client, project, app, alice, volunteers, tmp_path):
    _submit(client, project, alice)
    path = tmp_path / "copy.bin"
    path.write_bytes(DATA)
    SubmitClient(client, project.slug, alice.authenticator).upload_files([path], [md5_name(DATA)])
    reply = rpc(client, project, make_request(volunteers[0].authenticator, cpu_req_secs=100.0))
    (info,) = [f for f in reply.file_infos if f.name == md5_name(DATA)]
    assert info.download_urls == (f"{project.download_url}/{md5_name(DATA)}",)


def test_a_deleted_remote_input_named_again_is_in_use_again_at_the_new_url(project):
    first = RemoteFile(URL, MD5, len(DATA))
    row = input_file_stage(project=project, spec=WorkInput(name=md5_name(DATA), remote=first))
    InputFile.objects.filter(id=row.id).update(file_delete_state=FileDeleteState.DONE)
    moved = RemoteFile("https://mirror.example.org/set-7.bin", MD5, len(DATA))
    again = input_file_stage(project=project, spec=WorkInput(name=md5_name(DATA), remote=moved))
    assert (again.id, again.file_delete_state, again.remote_url) == (row.id, FileDeleteState.INIT, moved.url)


def _api_jobs(client, account, files: list[dict]):
    from tests.submit.test_api import _post

    batch_id = _post(client, "batches/", account, {"app": "cpuapp"}).json()["id"]
    return _post(
        client, f"batches/{batch_id}/jobs/", account, {"jobs": [{"name": "j0", "input_files": files}]}
    )


def test_the_json_api_takes_a_remote_input(client, project, app, alice):
    response = _api_jobs(client, alice, [{"mode": "remote", "url": URL, "nbytes": len(DATA), "md5": MD5}])
    assert response.status_code == 200, response.content
    assert InputFile.objects.get(name=md5_name(DATA)).remote_url == URL


def test_the_json_api_says_what_a_remote_input_lacks(client, project, app, alice):
    response = _api_jobs(client, alice, [{"mode": "remote", "url": URL}])
    assert response.status_code == 400
    assert set(response.json()["jobs"]["0"]["input_files"]["0"]) == {"md5", "nbytes"}
    assert not InputFile.objects.exists()
