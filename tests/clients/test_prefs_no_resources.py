"""Project preferences refuse to turn off both the CPU and the GPUs: the scheduler would then
send the volunteer's computers nothing."""

from __future__ import annotations

import pytest

from apps.volunteers.models import Account
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(project) -> Account:
    return AccountFactory(project=project, email_addr="ada@example.org", password="pw123456")


@pytest.fixture
def logged_in(client, project, account):  # type: ignore[no-untyped-def]
    client.post(f"/{project.slug}/account/", {"email": account.email_addr, "password": "pw123456"})
    return client


def test_unticking_cpu_and_gpus_shows_an_error(logged_in, project, account):
    response = logged_in.post(f"/{project.slug}/account/prefs/", {"allow_beta_work": "on"})
    assert response.status_code == 200
    assert "Choose at least one of Use CPU and Use GPUs" in response.content.decode()


def test_unticking_cpu_and_gpus_saves_nothing(logged_in, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {"allow_beta_work": "on"})
    account.refresh_from_db()
    assert (account.no_cpu, account.no_gpus, account.allow_beta_work) == (False, False, False)
