"""Refusals: each is BOINC's error reply (HTTP 200, <error> inside the call's root) and
writes nothing."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from urllib.parse import urlencode

import pytest

from apps.submit.models import Batch, JobFile, UserSubmit
from apps.work.models import InputFile, Workunit
from tests.submit.client import InputFile as FileDesc
from tests.submit.client import Job, SubmitClient, md5_name
from tests.submit.conftest import make_account

pytestmark = pytest.mark.django_db


def _error(reply: dict) -> str:
    assert set(reply) == {"error"}, reply
    assert reply["error"]["error_num"] == "-1"
    return reply["error"]["error_msg"]


def _nothing_written() -> bool:
    return not Batch.objects.exists() and not Workunit.objects.exists()


def _staged(client, project, account, tmp_path) -> str:
    path = tmp_path / "in.txt"
    path.write_bytes(b"data\n")
    name = md5_name(path.read_bytes())
    SubmitClient(client, project.slug, account.authenticator).upload_files([path], [name])
    return name


def test_an_unknown_app_is_refused(client, project, app, alice):
    sub = SubmitClient(client, project.slug, alice.authenticator)
    assert _error(sub.submit_batch("noapp", [Job()])) == "app not found: noapp"
    assert sub.last_status == 200
    assert _nothing_written()


def test_a_wrong_authenticator_is_refused(client, project, app, alice):
    sub = SubmitClient(client, project.slug, "x" * 32)
    assert _error(sub.create_batch("cpuapp")) == "bad authenticator"
    assert _nothing_written()


def test_an_account_that_is_no_submitter_is_refused(client, project, app):
    stranger = make_account(project, "stranger")
    assert _error(SubmitClient(client, project.slug, stranger.authenticator).create_batch("cpuapp")) == (
        "no submit access"
    )
    assert _nothing_written()


def test_a_submitter_without_the_app_is_refused(client, project, app):
    carol = make_account(project, "carol")
    UserSubmit.objects.create(account=carol)  # neither submit_all nor a row for the app
    assert _error(SubmitClient(client, project.slug, carol.authenticator).create_batch("cpuapp")) == (
        "no submit access"
    )
    assert _nothing_written()


def test_a_submitter_over_its_jobs_in_progress_is_refused(client, project, app, alice, tmp_path):
    UserSubmit.objects.filter(account=alice).update(max_jobs_in_progress=3)
    name = _staged(client, project, alice, tmp_path)
    sub = SubmitClient(client, project.slug, alice.authenticator)
    reply = sub.submit_batch("cpuapp", [Job(files=[FileDesc(name)]) for _ in range(4)])
    assert _error(reply) == "limit on jobs in progress exceeded"
    assert _nothing_written()


def test_a_submitter_without_quota_is_refused(client, project, app, alice, tmp_path):
    UserSubmit.objects.filter(account=alice).update(quota=0)
    name = _staged(client, project, alice, tmp_path)
    reply = SubmitClient(client, project.slug, alice.authenticator).submit_batch(
        "cpuapp", [Job(files=[FileDesc(name)])]
    )
    assert _error(reply) == "submitter has no quota"
    assert _nothing_written()


@pytest.mark.parametrize("op", ["query_batch", "abort_batch", "retire_batch"])
def test_someone_elses_batch_is_refused(client, project, app, alice, bob, op):
    batch_id = int(SubmitClient(client, project.slug, alice.authenticator).create_batch("cpuapp")["batch_id"])
    bobs = SubmitClient(client, project.slug, bob.authenticator)
    assert _error(bobs.batch_op(op, batch_id)) == "not owner of batch"
    assert Batch.objects.get(id=batch_id).state == 0


def test_submitting_into_someone_elses_batch_is_refused(client, project, app, alice, bob, tmp_path):
    batch_id = int(SubmitClient(client, project.slug, alice.authenticator).create_batch("cpuapp")["batch_id"])
    name = _staged(client, project, bob, tmp_path)
    reply = SubmitClient(client, project.slug, bob.authenticator).submit_batch(
        "cpuapp", [Job(files=[FileDesc(name)])], batch_id=batch_id
    )
    assert _error(reply) == "not owner of batch"
    assert not Workunit.objects.exists()


def test_a_job_file_over_the_size_limit_is_refused(client, project, app, alice, tmp_path, settings):
    settings.COBBLESTONE_SUBMIT_MAX_FILE_BYTES = 10
    path = tmp_path / "big.bin"
    path.write_bytes(b"x" * 11)
    name = md5_name(path.read_bytes())
    reply = SubmitClient(client, project.slug, alice.authenticator).upload_files([path], [name])
    assert _error(reply) == f"{name}: file over the 10-byte limit"
    assert not InputFile.objects.exists()
    assert not (project.download_dir / name).exists()


def test_a_file_whose_content_is_not_its_name_is_refused(client, project, app, alice, tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(b"something")
    name = md5_name(b"something else")
    reply = SubmitClient(client, project.slug, alice.authenticator).upload_files([path], [name])
    assert "MD5" in _error(reply)
    assert not JobFile.objects.exists()


@pytest.mark.parametrize("name", ["../../etc/passwd", "jf_../x", "/etc/passwd", "..", "jf_" + "0" * 31 + "/"])
def test_path_tricks_in_job_file_names_are_refused(client, project, app, alice, name):
    reply = SubmitClient(client, project.slug, alice.authenticator).query_files([name])
    assert _error(reply) == "bad filename"


@pytest.mark.parametrize("source", ["../../etc/passwd", "/etc/passwd", "a/../../b"])
def test_path_tricks_in_staged_input_names_are_refused(client, project, app, alice, source):
    reply = SubmitClient(client, project.slug, alice.authenticator).submit_batch(
        "cpuapp", [Job(files=[FileDesc(source)])]
    )
    assert _error(reply).startswith("job 0: bad file name")
    assert _nothing_written()


def test_a_server_path_as_input_is_refused(client, project, app, alice):
    reply = SubmitClient(client, project.slug, alice.authenticator).submit_batch(
        "cpuapp", [Job(files=[FileDesc("/etc/passwd", mode="local")])]
    )
    assert _error(reply) == "job 0: unsupported file mode: local"
    assert _nothing_written()


def test_a_path_trick_in_a_template_name_is_refused(client, project, app, alice, tmp_path):
    name = _staged(client, project, alice, tmp_path)
    reply = SubmitClient(client, project.slug, alice.authenticator).submit_batch(
        "cpuapp",
        [Job(files=[FileDesc(name)])],
        extra="<input_template_filename>../../settings</input_template_filename>\n",
    )
    assert _error(reply) == "bad template file name: ../../settings"
    assert _nothing_written()


@pytest.mark.parametrize(
    "body",
    [
        "<submit_batch><authenticator>x</authenticator><batch>",
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><create_batch>&e;</create_batch>',
        "<create_batch>" + "<a>" * 300 + "</a>" * 300 + "</create_batch>",
    ],
    ids=["unclosed", "entity", "deep"],
)
def test_malformed_or_hostile_xml_is_refused(client, project, app, alice, body):
    sub = SubmitClient(client, project.slug, alice.authenticator)
    reply = sub.post(body)
    assert sub.last_status == 200
    assert _error(reply).startswith("can't parse request message")
    assert _nothing_written()


@pytest.mark.parametrize("body", ["<drop_tables/>", "\x00\x01", ""], ids=["unknown", "binary", "empty"])
def test_a_request_naming_no_known_call_gets_a_bare_error(client, project, app, body):
    response = client.post(
        f"/{project.slug}/submit_rpc_handler.php",
        data=urlencode({"request": body}),
        content_type="application/x-www-form-urlencoded",
    )
    root = ElementTree.XML(response.content)
    assert (response.status_code, root.tag, root.findtext("error_num")) == (200, "error", "-1")


def test_more_jobs_than_the_limit_are_refused(client, project, app, alice, tmp_path, settings):
    settings.COBBLESTONE_SUBMIT_MAX_JOBS = 3
    name = _staged(client, project, alice, tmp_path)
    reply = SubmitClient(client, project.slug, alice.authenticator).submit_batch(
        "cpuapp", [Job(files=[FileDesc(name)]) for _ in range(4)]
    )
    assert _error(reply) == "can't parse request message: more than 3 jobs in one request"
    assert _nothing_written()


def test_a_batch_with_one_bad_job_writes_nothing(client, project, app, alice, tmp_path):
    name = _staged(client, project, alice, tmp_path)
    jobs = [
        Job(name="ok0", files=[FileDesc("inline contents", mode="inline")]),
        Job(name="ok1", files=[FileDesc(name)]),
        Job(name="bad", files=[FileDesc("jf_" + "0" * 32)]),  # never uploaded
    ]
    reply = SubmitClient(client, project.slug, alice.authenticator).submit_batch("cpuapp", jobs)
    assert "is not in the download area" in _error(reply)
    assert _nothing_written()
    assert not (project.download_dir / md5_name(b"inline contents")).exists()


def test_abort_jobs_with_one_job_of_someone_else_aborts_none(client, project, app, alice, bob, tmp_path):
    for owner, prefix in ((alice, "a"), (bob, "b")):
        name = _staged(client, project, owner, tmp_path)
        SubmitClient(client, project.slug, owner.authenticator).submit_batch(
            "cpuapp", [Job(name=f"{prefix}{i}", files=[FileDesc(name)]) for i in range(2)]
        )
    reply = SubmitClient(client, project.slug, alice.authenticator).abort_jobs(["a0", "b0"])
    assert _error(reply) == "not owner"
    assert not Workunit.objects.filter(error_mask__gt=0).exists()


def test_guessing_authenticators_is_refused_after_the_log_in_limit(client, project, app, settings):
    settings.COBBLESTONE_RATELIMIT_LOGIN_IP = "3/15m"
    replies = [SubmitClient(client, project.slug, f"guess{i}").create_batch("cpuapp") for i in range(5)]
    assert [_error(r) for r in replies[:3]] == ["bad authenticator"] * 3
    assert _error(replies[4]).startswith("Too many attempts")


def test_a_form_with_too_many_fields_is_refused(client, project, app):
    response = client.post(
        f"/{project.slug}/submit_rpc_handler.php",
        data="&".join(f"f{i}=x" for i in range(100)),
        content_type="application/x-www-form-urlencoded",
    )
    assert (response.status_code, ElementTree.XML(response.content).findtext("error_num")) == (200, "-1")
