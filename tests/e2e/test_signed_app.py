"""The stock client attaches, fetches a signed app, runs it, uploads, reports, gets credit."""

from __future__ import annotations

import gzip
import logging
import time

import pytest
from django.core.management import call_command

from apps.core.domain.signing import file_md5_hex
from apps.scheduler.transfer import partial_path
from apps.work.domain.states import ClientState, Outcome, ServerState
from apps.work.models import OutputFile, Result
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_signed_app_runs_uploads_reports_and_earns_credit(boinc_client, base_url, tmp_path, caplog):
    started = time.monotonic()
    caplog.set_level(logging.DEBUG, logger="apps.scheduler.transfer")
    e2e = make_e2e_project(slug="signed")
    wu = add_job(e2e, "job1", tmp_path / "inputs")
    # The input also lies there gzipped: curl decodes it, and the client's MD5 check must pass.
    source = e2e.project.download_dir / "job1_in.txt"
    source.with_name("job1_in.txt.gz").write_bytes(gzip.compress(source.read_bytes()))
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)

    result = Result.objects.get(workunit=wu)
    wait_until(
        lambda: Result.objects.filter(pk=result.pk, server_state=ServerState.OVER).exists(),
        timeout=45,
        what="the report of job1_0",
        client=client,
    )
    wait_until(lambda: "got ack for task job1_0" in client.log(), timeout=10, what="the ack", client=client)

    assert "Found 1 scheduler URLs in master file" in client.log()  # both forms, one URL
    assert "job1_in.txt: sent gzip-encoded" in caplog.text
    result.refresh_from_db()
    assert result.outcome == Outcome.SUCCESS
    assert result.client_state == ClientState.FILES_UPLOADED
    assert result.exit_status == 0
    assert "demo worker processed" in result.stderr_out
    output = OutputFile.objects.get(result=result)
    stored = e2e.project.upload_dir / output.name
    assert output.uploaded is True
    assert output.nbytes == stored.stat().st_size
    assert output.md5_cksum == file_md5_hex(stored)
    assert not partial_path(e2e.project, output.name).exists()
    state = client.read("client_state.xml")
    assert e2e.project.code_sign_public_key.strip()[:40] in state  # the client accepted the key

    # The back end validates and grants credit; the next RPC shows it to the volunteer.
    call_command("run_daemons", "--once")
    result.refresh_from_db()
    assert result.granted_credit > 0
    client.update(e2e.master_url)
    status = client.project_status()
    assert float(status["user_total_credit"]) > 0
    assert float(status["host_total_credit"]) > 0
    assert time.monotonic() - started < 60
