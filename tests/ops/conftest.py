"""A project with one CPU app and three jobs, for the monitoring and command tests; the app
and the account come from the scheduler tests' fixtures, built on this project."""

from __future__ import annotations

import pytest

from apps.projects.services import project_create
from tests.scheduler.conftest import account, cpu_app, make_jobs, worker  # noqa: F401


@pytest.fixture
def project():
    return project_create(slug="ops", name="Ops Test").project


@pytest.fixture
def jobs(project, cpu_app):  # noqa: F811
    return make_jobs(project, cpu_app, 3)
