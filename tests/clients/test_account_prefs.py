"""The volunteer's project preferences page: processors to use (no_cpu, no_<gpu>) and "Run test
applications?" (allow_beta_work)."""

from __future__ import annotations

import pytest

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.scheduler.services.prefs import account_project_prefs_get
from apps.volunteers.models import Account
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(project) -> Account:
    email = "ada@example.org"
    return AccountFactory(project=project, email_addr=email, password="pw123456")


@pytest.fixture
def logged_in(client, project, account):
    client.post(f"/{project.slug}/account/", {"email": account.email_addr, "password": "pw123456"})
    return client


BOTH_PROCESSORS = {"resource_share": "100", "use_cpu": "on", "use_nvidia": "on"}


@pytest.fixture(autouse=True)
def gpu_app(project, tmp_path):
    """An app with a CPU and an NVIDIA version: the page asks about both."""
    worker = tmp_path / "worker.sh"
    worker.write_text("#!/bin/sh\n")
    app = app_create(project=project, name="mixed")
    for plan_class in ("", "cuda"):
        app_version_add(
            project=project,
            app_name="mixed",
            version_num=100,
            platform_name="x86_64-pc-linux-gnu",
            plan_class=plan_class,
            files=[AppFileSpec(path=worker)],
        )
    return app


def test_volunteer_turns_on_test_applications(logged_in, project, account):
    response = logged_in.post(f"/{project.slug}/account/prefs/", {**BOTH_PROCESSORS, "allow_beta_work": "on"})
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.allow_beta_work is True


def test_volunteer_turns_off_test_applications(logged_in, project, account):
    account.allow_beta_work = True
    account.save()
    logged_in.post(f"/{project.slug}/account/prefs/", BOTH_PROCESSORS)
    account.refresh_from_db()
    assert account.allow_beta_work is False


def test_volunteer_turns_off_the_nvidia_gpu(logged_in, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {"resource_share": "100", "use_cpu": "on"})
    account.refresh_from_db()
    prefs = account_project_prefs_get(account).primary
    assert (prefs.no_cpu, prefs.no_cuda) == (False, True)


def test_volunteer_turns_off_the_cpu(logged_in, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {"resource_share": "100", "use_nvidia": "on"})
    account.refresh_from_db()
    prefs = account_project_prefs_get(account).primary
    assert (prefs.no_cpu, prefs.no_cuda) == (True, False)


def test_prefs_page_shows_both_processors_on_by_default(logged_in, project, account):
    page = logged_in.get(f"/{project.slug}/account/prefs/").content.decode()
    assert 'id="id_use_cpu" checked>' in page
    assert 'id="id_use_nvidia" checked>' in page


def test_prefs_page_shows_the_saved_choice(logged_in, project, account):
    response = logged_in.post(
        f"/{project.slug}/account/prefs/", {**BOTH_PROCESSORS, "allow_beta_work": "on"}, follow=True
    )
    page = response.content.decode()
    assert "Your preferences are saved" in page
    assert '<label for="id_allow_beta_work">Run test applications?</label>' in page
    assert 'id="id_allow_beta_work" checked>' in page


def test_prefs_page_shows_test_applications_off_by_default(logged_in, project, account):
    page = logged_in.get(f"/{project.slug}/account/prefs/").content.decode()
    assert 'id="id_allow_beta_work">' in page


def test_account_page_links_to_the_prefs_page(logged_in, project):
    page = logged_in.get(f"/{project.slug}/account/").content.decode()
    assert f'href="/{project.slug}/account/prefs/"' in page


def test_prefs_page_logged_out_asks_to_log_in(client, project, account):
    response = client.post(f"/{project.slug}/account/prefs/", {"allow_beta_work": "on"})
    assert response["Location"] == f"/{project.slug}/account/"
    account.refresh_from_db()
    assert account.allow_beta_work is False
