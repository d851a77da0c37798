"""The volunteer's project controls in the client: "no new tasks", reset, detach and attach.

The server must acknowledge what a host reports without sending it work it did not ask
for, and must not lose the results a reset or detached client dropped: they come back
(as replacements) instead of waiting for their deadlines on a host that forgot them.
"""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command

from apps.hosts.models import Host
from apps.projects.models import Project
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _over(name: str) -> bool:
    return Result.objects.filter(name=name, server_state=ServerState.OVER).exists()


def test_no_new_tasks_reports_the_finished_task_and_gets_no_work(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = make_e2e_project(slug="nomore")
    add_job(e2e, "first", tmp_path / "in", command_line="4")
    client = boinc_client()
    client.start(
        "--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False, ncpus=1
    )
    wait_until(lambda: "Starting task first_0" in client.log(), timeout=30, what="the task", client=client)
    client.cmd("--project", e2e.master_url, "nomorework")
    waiting = [add_job(e2e, f"later{k}", tmp_path / "in") for k in range(2)]

    def reported() -> bool:
        if _over("first_0"):
            return True
        client.cmd("--project", e2e.master_url, "update", check=False)
        time.sleep(2)
        return False

    wait_until(reported, timeout=30, what="the report", client=client)
    wait_until(lambda: "got ack for task first_0" in client.log(), timeout=10, what="the ack", client=client)
    client.update(e2e.master_url)  # one more RPC with nothing to report

    assert Result.objects.get(name="first_0").outcome == Outcome.SUCCESS
    assert set(Result.objects.filter(workunit__in=waiting).values_list("server_state", flat=True)) == {
        ServerState.UNSENT
    }
    assert "later" not in client.cmd("--get_tasks").stdout
    assert "<dont_send_work>1</dont_send_work>" in client.read(
        f"sched_request_{client.project_dir(e2e.master_url).name}.xml"
    )
    assert time.monotonic() - started < 60


def test_a_detached_and_reattached_client_is_the_same_host_and_its_task_is_replaced(
    boinc_client, base_url, tmp_path
):
    started = time.monotonic()
    e2e = make_e2e_project(slug="reattach", max_total_results=3)
    # Short: the client waits for a running task to exit before it detaches (a plain script
    # app does not answer its quit request), and this task's result is dropped anyway.
    wu = add_job(e2e, "dropped", tmp_path / "in", command_line="8")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)
    wait_until(lambda: "Starting task dropped_0" in client.log(), timeout=30, what="the task", client=client)
    host = Host.objects.get(project=e2e.project)

    client.cmd("--project", e2e.master_url, "detach", timeout=20)
    wait_until(
        lambda: "dropped_0" not in client.cmd("--get_tasks").stdout,
        timeout=15,
        what="the detach",
        client=client,
    )
    rpcs = client.rpc_count()
    client.cmd("--project_attach", e2e.master_url, e2e.account.authenticator)
    wait_until(
        lambda: client.rpc_count() > rpcs, timeout=30, what="the first RPC after attach", client=client
    )

    # Recognised by its host_cpid: the same host record, no second one.
    assert list(Host.objects.filter(project=e2e.project).values_list("id", flat=True)) == [host.id]
    assert client.project_status().get("hostid", str(host.id)) == str(host.id)
    # The task the client dropped is over at once (not left to its deadline) and replaced.
    first = Result.objects.get(name="dropped_0")
    assert (first.server_state, first.outcome) == (ServerState.OVER, Outcome.CLIENT_DETACHED)
    call_command("run_daemons", "--once")
    assert Result.objects.filter(workunit=wu).exclude(pk=first.pk).exists()
    assert time.monotonic() - started < 60


def test_a_reset_project_gets_its_lost_task_again(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = make_e2e_project(slug="resetproj")
    Project.objects.filter(pk=e2e.project.pk).update(resend_lost_results=True)
    add_job(e2e, "lost", tmp_path / "in", command_line="6")
    client = boinc_client()
    client.start(
        "--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False, ncpus=1
    )
    wait_until(lambda: "Starting task lost_0" in client.log(), timeout=30, what="the task", client=client)

    client.cmd("--project", e2e.master_url, "reset", timeout=20)
    wait_until(
        lambda: "lost_0" not in client.cmd("--get_tasks").stdout, timeout=15, what="the reset", client=client
    )

    def done() -> bool:
        if _over("lost_0"):
            return True
        client.cmd("--project", e2e.master_url, "update", check=False)
        time.sleep(2)
        return False

    wait_until(done, timeout=40, what="the lost task to be sent again and reported", client=client)
    result = Result.objects.get(name="lost_0")
    assert result.outcome == Outcome.SUCCESS
    assert Result.objects.filter(workunit=result.workunit).count() == 1
    assert time.monotonic() - started < 60
