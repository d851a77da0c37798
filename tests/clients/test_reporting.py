"""Uploads and reports together: what the scheduler records joins the back-end pipeline."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.core.management import call_command

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.protocol import ReportedFile, UploadStatus
from apps.volunteers.models import Account
from apps.work.domain.states import Outcome, ServerState, ValidateState
from apps.work.models import OutputFile, Result
from apps.work.services import JobSpec, OutputSpec, workunits_create
from tests.clients.conftest import md5, post_upload, upload_body
from tests.scheduler.conftest import PLATFORM, make_request, reported, rpc

pytestmark = pytest.mark.django_db

DATA = b"HELLO BOINC\n"


@pytest.fixture
def sent(client, project, tmp_path):
    """A job sent to a new host by a real scheduler RPC: (account, reply, result)."""
    main = tmp_path / "main.sh"
    main.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    app = app_create(project=project, name="worker")
    app_version_add(
        project=project, app_name="worker", version_num=100, platform_name=PLATFORM, files=[AppFileSpec(main)]
    )
    workunits_create(
        project=project,
        app=app,
        jobs=[JobSpec(name="job", outputs=(OutputSpec(open_name="out.txt", max_nbytes=10_000),))],
    )
    account = Account.objects.create(project=project, name="v", email_addr="v@example.com", passwd_hash="x")
    reply = rpc(client, project, make_request(account.authenticator))
    assert [r.name for r in reply.results] == ["job_0"]
    return account, reply, Result.objects.get(name="job_0")


def report(client, project, account, first_reply, name: str, data_md5: str, **kw):
    result = replace(
        reported(name, **kw),
        files=(ReportedFile(name=f"{name}_0", nbytes=len(DATA), max_nbytes=10_000, md5_cksum=data_md5),),
    )
    return rpc(
        client,
        project,
        make_request(
            account.authenticator,
            hostid=first_reply.hostid,
            rpc_seqno=1,
            code_sign_key=first_reply.code_sign_key,
            cpu_req_secs=0.0,
            work_req_seconds=0.0,
            results=(result,),
        ),
    )


def test_uploaded_then_reported_result_is_a_success_with_its_file_recorded(client, project, sent):
    account, first, result = sent
    output = OutputFile.objects.get(result=result)
    assert post_upload(client, project, upload_body(output, DATA)).reply.status == UploadStatus.OK
    reply = report(client, project, account, first, "job_0", md5(DATA))
    assert reply.result_acks == ("job_0",)
    result.refresh_from_db()
    output.refresh_from_db()
    assert (result.server_state, result.outcome) == (ServerState.OVER, Outcome.SUCCESS)
    assert (output.uploaded, output.nbytes, output.md5_cksum) == (True, len(DATA), md5(DATA))


def test_report_cannot_change_the_checksum_of_a_received_file(client, project, sent):
    """The upload handler computed the MD5 of the bytes it holds; a report may not replace it.

    Fails today: apps/scheduler/services/reports.py ``_output_files_update`` sets
    ``output.md5_cksum`` from the report even when ``output.uploaded`` is True.
    """
    account, first, result = sent
    output = OutputFile.objects.get(result=result)
    post_upload(client, project, upload_body(output, DATA))
    report(client, project, account, first, "job_0", md5(b"something else"))
    output.refresh_from_db()
    assert output.md5_cksum == md5(DATA)


def test_success_reported_without_the_upload_earns_nothing(client, project, sent):
    account, first, result = sent
    report(client, project, account, first, "job_0", md5(DATA))
    output = OutputFile.objects.get(result=result)
    assert output.uploaded is False
    call_command("run_daemons", "--once", "--project", project.slug)
    result.refresh_from_db()
    assert result.granted_credit == 0
    assert result.validate_state != ValidateState.VALID


def test_upload_after_the_report_of_a_failure_is_refused(client, project, sent):
    account, first, result = sent
    report(client, project, account, first, "job_0", md5(DATA), state=3, exit_status=1)
    output = OutputFile.objects.get(result=result)
    assert post_upload(client, project, upload_body(output, DATA)).reply.status == UploadStatus.PERMANENT
