"""Trickle messages with the stock client: an application built against Debian's
libboinc-app-dev sends trickle-ups; each is stored once, the client deletes its trickle
files once the reply acknowledges them, and a trickle-down reaches the running task."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from apps.core import clock
from apps.hosts.models import Host
from apps.trickles.models import HandledState, MsgFromHost, MsgToHost, TrickleHandler
from apps.trickles.services import trickle_down_create, trickle_handle
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.conftest import require_service
from tests.e2e.conftest import add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SOURCE = Path(__file__).with_name("trickle_app.cpp")


@pytest.fixture
def trickle_app(tmp_path: Path) -> Path:
    """The application, compiled with g++ against libboinc-app-dev's headers and libraries."""
    cxx = require_service("COBBLESTONE_TEST_BOINC_APP_CXX", "g++ with Debian's libboinc-app-dev")
    binary = tmp_path / "trickler"
    build = subprocess.run(
        [cxx, "-O1", "-o", str(binary), str(SOURCE), "-lboinc_api", "-lboinc", "-lpthread"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    return binary


def test_trickles_are_stored_once_acknowledged_and_a_trickle_down_reaches_the_task(
    boinc_client, base_url, tmp_path, trickle_app
):
    e2e = make_e2e_project(slug="trickles", script=trickle_app, app_name="trickler")
    TrickleHandler.objects.create(app=e2e.app, variety="runtime", max_runtime=60)
    add_job(e2e, "tjob", tmp_path / "in", command_line="120")
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator)

    def three_stored() -> bool:
        if MsgFromHost.objects.count() >= 3:
            return True
        # A trickle the task wrote while an RPC was under way waits for the next RPC.
        client.cmd("--project", e2e.master_url, "update", check=False)
        time.sleep(3)
        return False

    wait_until(three_stored, timeout=90, what="three trickle-ups stored", client=client)
    result = Result.objects.get(workunit__name="tjob")
    down = trickle_down_create(
        project=e2e.project,
        host_id=result.host_id,
        variety="boost",
        body="<factor>2</factor>",
        result_name=result.name,
        now=clock.now(),
    )

    def reported() -> bool:
        if Result.objects.filter(id=result.id, server_state=ServerState.OVER).exists():
            return True
        # An RPC under way when the trickle-down was made did not carry it: ask for another.
        client.cmd("--project", e2e.master_url, "update", check=False)
        time.sleep(3)
        return False

    wait_until(reported, timeout=90, what="the task to finish and be reported", client=client)
    result.refresh_from_db()
    messages = list(MsgFromHost.objects.order_by("send_time", "id"))
    assert [m.xml.split("<step>")[1][0] for m in messages] == ["1", "2", "3"]
    assert {m.result_name for m in messages} == {result.name}
    # The app exits 0 only once it has read the trickle-down.
    assert result.outcome == Outcome.SUCCESS, result.stderr_out
    assert MsgToHost.objects.get(id=down.id).delivered
    client.update(e2e.master_url)
    leftover = [
        p.name for p in client.project_dir(e2e.master_url).iterdir() if p.name.startswith("trickle_up")
    ]
    assert leftover == []

    for message in messages:
        trickle_handle(message_id=message.id, now=clock.now())
    assert set(MsgFromHost.objects.values_list("handled", flat=True)) == {HandledState.HANDLED}
    assert Host.objects.get(id=result.host_id).total_credit > 0
