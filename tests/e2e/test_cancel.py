"""A job the admin cancels while its task runs on the host is aborted there and reported."""

from __future__ import annotations

import time

import pytest

from apps.work.domain.states import EXIT_ABORTED_BY_PROJECT, ClientState, Outcome, ServerState
from apps.work.models import Result, Workunit
from apps.work.services import workunit_cancel
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_cancelled_job_is_aborted_on_the_host_and_reported(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = make_e2e_project(slug="cancel")
    wu = add_job(e2e, "longjob", tmp_path / "inputs", command_line="120")  # sleeps two minutes
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)
    wait_until(lambda: "Starting task longjob_0" in client.log(), timeout=30, what="the task", client=client)

    assert workunit_cancel(workunit_ids=[wu.pk]) == 1
    client.update(e2e.master_url)  # the request lists the task in <other_results>
    wait_until(
        lambda: "result state=ABORTED for longjob_0" in client.log(),
        timeout=15,
        what="the abort",
        client=client,
    )

    def reported() -> bool:
        if Result.objects.filter(workunit=wu, server_state=ServerState.OVER).exists():
            return True
        client.cmd("--project", e2e.master_url, "update")  # skip any backoff after the error
        time.sleep(2)
        return False

    wait_until(reported, timeout=20, what="the report of the aborted task", client=client)
    result = Result.objects.get(workunit=wu)
    assert result.outcome == Outcome.CLIENT_ERROR
    assert result.client_state == ClientState.ABORTED
    assert result.exit_status == EXIT_ABORTED_BY_PROJECT
    wait_until(
        lambda: "got ack for task longjob_0" in client.log(), timeout=10, what="the ack", client=client
    )
    # The client may report the killed task once more before it drops it; both are acked.
    wait_until(
        lambda: "longjob_0" not in client.cmd("--get_tasks").stdout,
        timeout=20,
        what="the client to drop the task",
        client=client,
    )
    assert time.monotonic() - started < 60


def test_job_whose_workunit_is_already_done_is_dropped_only_if_not_started(boinc_client, base_url, tmp_path):
    """result_abort_if_not_started: one CPU runs one task; the queued one's job gets a
    canonical result elsewhere, so the host drops it unstarted and keeps running the other."""
    started = time.monotonic()
    e2e = make_e2e_project(slug="notstarted", target_nresults=2, min_quorum=1, max_total_results=4)
    e2e.project.one_result_per_user_per_wu = True
    e2e.project.save()
    for name in ("jobA", "jobB"):
        add_job(e2e, name, tmp_path / "inputs", command_line="120")
    client = boinc_client()
    client.start(
        "--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False, ncpus=1
    )
    wait_until(lambda: "Starting task job" in client.log(), timeout=30, what="a task", client=client)
    wait_until(
        lambda: Result.objects.filter(host__isnull=False, workunit__name__in=["jobA", "jobB"]).count() == 2,
        timeout=20,
        what="both jobs on the host",
        client=client,
    )
    running = "jobA" if "Starting task jobA" in client.log() else "jobB"
    queued = "jobB" if running == "jobA" else "jobA"
    on_host = Result.objects.get(workunit__name=queued, host__isnull=False)
    elsewhere = Result.objects.filter(workunit__name=queued).exclude(pk=on_host.pk).get()
    # Another host returned the job and the validator chose its result.
    Result.objects.filter(pk=elsewhere.pk).update(server_state=ServerState.OVER, outcome=Outcome.SUCCESS)
    Workunit.objects.filter(pk=on_host.workunit_id).update(canonical_result=elsewhere)

    client.update(e2e.master_url)
    wait_until(
        lambda: f"result state=ABORTED for {on_host.name}" in client.log(),
        timeout=15,
        what="the unstarted task to be dropped",
        client=client,
    )
    tasks = client.cmd("--get_tasks").stdout
    assert f"name: {running}_" in tasks
    assert "active_task_state: EXECUTING" in tasks
    assert time.monotonic() - started < 60
