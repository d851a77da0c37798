"""An app that exits with an error: a client error on the server, and a replacement result."""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command

from apps.work.domain.states import ClientState, Outcome, ServerState
from apps.work.models import OutputFile, Result
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FAILING_APP = """#!/bin/sh
echo "cannot compute today" >&2
exit 3
"""


def test_app_error_is_a_client_error_and_the_workunit_gets_a_replacement(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    script = tmp_path / "failing.sh"
    script.write_text(FAILING_APP)
    e2e = make_e2e_project(slug="failing", script=script, max_error_results=3, max_total_results=4)
    wu = add_job(e2e, "failjob", tmp_path / "inputs")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator, exit_when_idle=True)
    wait_until(
        lambda: "Computation for task failjob_0 finished" in client.log(),
        timeout=40,
        what="the task to fail",
        client=client,
    )
    # After an unrecoverable error the client defers its next RPC by minutes.
    client.update(e2e.master_url)
    client.wait_exit(timeout=15)

    first = Result.objects.get(workunit=wu, name="failjob_0")
    assert first.server_state == ServerState.OVER
    assert first.outcome == Outcome.CLIENT_ERROR
    assert first.client_state == ClientState.COMPUTE_ERROR
    assert first.exit_status == 3
    assert "cannot compute today" in first.stderr_out
    assert OutputFile.objects.get(result=first).uploaded is False
    assert "got ack for task failjob_0" in client.log()

    call_command("run_daemons", "--once")  # the transitioner creates the replacement
    replacement = Result.objects.filter(workunit=wu).exclude(pk=first.pk).get()
    assert replacement.server_state == ServerState.UNSENT
    assert time.monotonic() - started < 60
