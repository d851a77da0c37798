"""Anonymous platform: the client's own app_info.xml versions, chosen by the server (-2)."""

from __future__ import annotations

import time

import pytest

from apps.core.domain.resources import ProcType
from apps.protocol import AppDesc, AppInfo, AppInfoFile, AppVersionDesc, FileRef, render_app_info
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import OutputFile, Result
from tests.e2e.conftest import PLATFORM, add_job, make_e2e_project

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LOCAL_FILE = "my_worker.sh"
# Writes 20 000 bytes: at 8 KiB or more the client asks the upload handler for the stored size first.
BIG_OUTPUT_APP = """#!/bin/sh
i=0
while [ $i -lt 2000 ]; do printf '0123456789'; i=$((i + 1)); done > out.txt
echo 0 > boinc_finish_called
"""


def test_anonymous_platform_client_runs_its_own_app_version(boinc_client, base_url, tmp_path):
    started = time.monotonic()
    e2e = make_e2e_project(slug="anon", version=False)  # the server has no version at all
    wu = add_job(e2e, "anonjob", tmp_path / "inputs", max_nbytes=100_000)
    client = boinc_client()
    project_dir = client.project_dir(e2e.master_url)
    project_dir.mkdir(parents=True)
    (project_dir / LOCAL_FILE).write_text(BIG_OUTPUT_APP)
    (project_dir / LOCAL_FILE).chmod(0o755)  # the client does not set the bit for app_info files
    (project_dir / "app_info.xml").write_bytes(
        render_app_info(
            AppInfo(
                apps=(AppDesc(name="worker", user_friendly_name="My own worker"),),
                files=(AppInfoFile(name=LOCAL_FILE, executable=True),),
                app_versions=(
                    AppVersionDesc(
                        app_name="worker",
                        version_num=314,
                        platform=PLATFORM,
                        avg_ncpus=1,
                        file_refs=(FileRef(file_name=LOCAL_FILE, main_program=True),),
                    ),
                ),
            )
        )
    )
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator, exit_when_idle=True)
    client.wait_exit(timeout=50)

    request = client.read(f"sched_request_{project_dir.name}.xml")
    assert "<platform_name>anonymous</platform_name>" in request
    result = Result.objects.get(workunit=wu)
    assert result.server_state == ServerState.OVER
    assert result.outcome == Outcome.SUCCESS
    assert result.app_version is None
    assert result.app_version_code == -2
    assert result.anonymous_proc_type == ProcType.CPU.value
    assert (result.platform, result.version_num) == (PLATFORM, 314)
    output = OutputFile.objects.get(result=result)
    assert (output.uploaded, output.nbytes) == (True, 20_000)
    assert "<file_size>0</file_size>" in client.log()  # the size query before the upload
    assert "got ack for task anonjob_0" in client.log()
    # An <app_version> or app file_info in a reply would be logged as an error by the client.
    assert "[error]" not in client.log()
    assert time.monotonic() - started < 60
