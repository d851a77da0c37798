"""A new app version is released while the client runs a job of the old one: new jobs
come with the new version, and the old job still finishes and is reported as a success."""

from __future__ import annotations

import time

import pytest

from apps.applications.services import AppFileSpec, app_version_add
from apps.projects.models import Project
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.e2e.conftest import PLATFORM, WORKER, add_job, make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WORKER_V2 = WORKER.read_text().replace("demo worker processed", "worker 2.00 processed")


def test_new_jobs_get_the_new_version_while_the_old_job_finishes(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = make_e2e_project(slug="newver")
    Project.objects.filter(pk=e2e.project.pk).update(max_wus_to_send=1)
    old = add_job(e2e, "oldjob", tmp_path / "in", command_line="8")
    client = boinc_client()
    client.start(
        "--attach_project", e2e.master_url, e2e.account.authenticator, fetch_minimal_work=False, ncpus=1
    )
    wait_until(
        lambda: "Starting task oldjob_0" in client.log(), timeout=30, what="the old job", client=client
    )

    script = tmp_path / "worker2.sh"
    script.write_text(WORKER_V2)
    app_version_add(
        project=e2e.project,
        app_name=e2e.app.name,
        version_num=200,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=script)],
        api_version="7.20.0",
    )
    new = add_job(e2e, "newjob", tmp_path / "in")
    client.update(e2e.master_url)  # while oldjob_0 still runs

    def both_reported() -> bool:
        if Result.objects.filter(workunit__in=[old, new], server_state=ServerState.OVER).count() == 2:
            return True
        client.cmd("--project", e2e.master_url, "update", check=False)
        time.sleep(2)
        return False

    wait_until(both_reported, timeout=40, what="both jobs reported", client=client)
    old_result = Result.objects.select_related("app_version").get(workunit=old)
    new_result = Result.objects.select_related("app_version").get(workunit=new)
    assert (old_result.outcome, old_result.app_version.version_num) == (Outcome.SUCCESS, 100)
    assert (new_result.outcome, new_result.app_version.version_num) == (Outcome.SUCCESS, 200)
    assert "demo worker processed" in old_result.stderr_out
    assert "worker 2.00 processed" in new_result.stderr_out
    assert time.monotonic() - started < 60
