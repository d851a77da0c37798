"""The volunteer's project preferences page: processors to use (no_cpu, no_gpus) and "Run test
applications?" (allow_beta_work)."""

from __future__ import annotations

import pytest

from apps.volunteers.models import Account
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(project) -> Account:
    email = "ada@example.org"
    return AccountFactory(project=project, email_addr=email, password="pw123456")


@pytest.fixture
def logged_in(client, project, account):  # type: ignore[no-untyped-def]
    client.post(f"/{project.slug}/account/", {"email": account.email_addr, "password": "pw123456"})
    return client


BOTH_PROCESSORS = {"use_cpu": "on", "use_gpus": "on"}


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


def test_volunteer_turns_off_gpus(logged_in, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {"use_cpu": "on"})
    account.refresh_from_db()
    assert (account.no_cpu, account.no_gpus) == (False, True)


def test_volunteer_turns_off_the_cpu(logged_in, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {"use_gpus": "on"})
    account.refresh_from_db()
    assert (account.no_cpu, account.no_gpus) == (True, False)


def test_prefs_page_shows_both_processors_on_by_default(logged_in, project, account):
    page = logged_in.get(f"/{project.slug}/account/prefs/").content.decode()
    assert 'id="id_use_cpu" checked>' in page
    assert 'id="id_use_gpus" checked>' in page


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
