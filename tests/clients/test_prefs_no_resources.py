"""Project preferences refuse to turn off every processor type the project has applications
for: the scheduler would then send the volunteer's computers nothing."""

from __future__ import annotations

import pytest

from apps.volunteers.models import Account
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(project) -> Account:
    return AccountFactory(project=project, email_addr="ada@example.org", password="pw123456")


@pytest.fixture
def logged_in(client, project, account):
    client.post(f"/{project.slug}/account/", {"email": account.email_addr, "password": "pw123456"})
    return client


def test_unticking_the_cpu_of_a_cpu_only_project_shows_an_error(logged_in, project, account):
    response = logged_in.post(
        f"/{project.slug}/account/prefs/", {"resource_share": "100", "allow_beta_work": "on"}
    )
    assert response.status_code == 200
    assert "Use CPU must stay on: this project&#x27;s tasks all run on the CPU." in response.content.decode()


def test_unticking_every_processor_saves_nothing(logged_in, project, account):
    logged_in.post(f"/{project.slug}/account/prefs/", {"resource_share": "100", "allow_beta_work": "on"})
    account.refresh_from_db()
    assert (account.no_cpu, account.no_gpus, account.allow_beta_work) == (False, False, False)
