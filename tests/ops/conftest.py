"""A project with one CPU app and work, for the monitoring tests (built as the scheduler tests do)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.projects.services import project_create
from apps.volunteers.models import Account, make_passwd_hash
from tests.scheduler.conftest import PLATFORM, make_jobs


@pytest.fixture
def project():
    return project_create(slug="ops", name="Ops Test").project


@pytest.fixture
def account(project):
    return Account.objects.create(
        project=project, name="Vol", email_addr="vol@example.com", passwd_hash=make_passwd_hash(None)
    )


@pytest.fixture
def cpu_app(project, tmp_path: Path):
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
    make_jobs(project, app, 3)
    return app
