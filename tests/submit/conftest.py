"""A project with an app, its default templates, two submitters and volunteers' accounts."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.projects.services import project_create
from apps.submit.models import UserSubmit, UserSubmitApp
from apps.submit.services.submission import templates_dir
from apps.volunteers.models import Account, make_passwd_hash
from tests.scheduler.conftest import PLATFORM

INPUT_TEMPLATE = """<input_template>
    <file_info>
        <number>0</number>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
        </file_ref>
        <rsc_fpops_est>1e12</rsc_fpops_est>
        <rsc_fpops_bound>1e14</rsc_fpops_bound>
    </workunit>
</input_template>
"""
OUTPUT_TEMPLATE = """<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>100000</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
        </file_ref>
    </result>
</output_template>
"""


def make_account(project, name: str) -> Account:
    return Account.objects.create(
        project=project, name=name, email_addr=f"{name}@example.com", passwd_hash=make_passwd_hash(None)
    )


@pytest.fixture
def project(tmp_path: Path):
    project = project_create(slug="subm", name="Submission Test").project
    project.request_delay = 0
    project.save()
    return project


@pytest.fixture
def app(project, tmp_path: Path):
    worker = tmp_path / "worker.sh"
    worker.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    app = app_create(project=project, name="cpuapp", user_friendly_name="CPU app")
    app_version_add(
        project=project,
        app_name="cpuapp",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    folder = templates_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cpuapp_in").write_text(INPUT_TEMPLATE)
    (folder / "cpuapp_out").write_text(OUTPUT_TEMPLATE)
    return app


@pytest.fixture
def alice(project, app) -> Account:
    account = make_account(project, "alice")
    UserSubmit.objects.create(account=account, quota=1)
    UserSubmitApp.objects.create(account=account, app=app)
    return account


@pytest.fixture
def bob(project, app) -> Account:
    account = make_account(project, "bob")
    UserSubmit.objects.create(account=account, quota=1, submit_all=True)
    return account


@pytest.fixture
def volunteers(project) -> list[Account]:
    return [make_account(project, f"vol{i}") for i in range(2)]
