"""The volunteer aborts a task in the client: it is reported as aborted, and the workunit
gets a replacement (an abort by the user is not the application's error)."""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command

from apps.work.domain.states import EXIT_ABORTED_VIA_GUI, ClientState, Outcome, ServerState
from apps.work.models import Result
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_task_aborted_by_the_volunteer_is_reported_and_replaced(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    # No error is tolerated: the workunit survives only if the abort is not counted as one.
    e2e = make_e2e_project(slug="userabort", max_error_results=0, max_total_results=3)
    wu = add_job(e2e, "abortme", tmp_path / "in", command_line="120")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)
    wait_until(lambda: "Starting task abortme_0" in client.log(), timeout=30, what="the task", client=client)

    client.cmd("--task", e2e.master_url, "abortme_0", "abort")

    def reported() -> bool:
        if Result.objects.filter(name="abortme_0", server_state=ServerState.OVER).exists():
            return True
        client.cmd("--project", e2e.master_url, "update", check=False)  # past the error backoff
        time.sleep(2)
        return False

    wait_until(reported, timeout=30, what="the report of the aborted task", client=client)
    first = Result.objects.get(name="abortme_0")
    assert first.outcome == Outcome.CLIENT_ERROR
    assert first.client_state == ClientState.ABORTED
    assert first.exit_status == EXIT_ABORTED_VIA_GUI
    wait_until(
        lambda: "got ack for task abortme_0" in client.log(), timeout=10, what="the ack", client=client
    )

    call_command("run_daemons", "--once")
    wu.refresh_from_db()
    assert wu.error_mask == 0
    replacement = Result.objects.filter(workunit=wu).exclude(pk=first.pk).get()
    assert replacement.name == "abortme_1"
    assert replacement.server_state in (ServerState.UNSENT, ServerState.IN_PROGRESS)
    assert time.monotonic() - started < 60
