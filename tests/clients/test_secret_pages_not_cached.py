"""Pages and web RPC answers that hold an account key or an account's details tell browsers and
proxies to keep no copy (Cache-Control: no-store)."""

from __future__ import annotations

import pytest

from apps.volunteers.models import passwd_hash
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db

EMAIL = "ada@example.org"
PW_HASH = passwd_hash("longpassword", EMAIL)


def kept_by_nobody(response) -> bool:
    return "no-store" in response.get("Cache-Control", "") and "private" in response["Cache-Control"]


def test_the_account_page_with_the_key_is_not_stored(client, project):
    client.post(f"/{project.slug}/signup/", {"name": "Ada", "email": EMAIL, "password": "longpassword"})
    page = client.get(f"/{project.slug}/account/")
    assert 'id="account-key"' in page.content.decode()
    assert kept_by_nobody(page)


def test_lookup_account_answer_with_the_key_is_not_stored(client, project):
    account = AccountFactory(project=project, email_addr=EMAIL, passwd_hash=PW_HASH)
    answer = client.get(f"/{project.slug}/lookup_account.php?email_addr={EMAIL}&passwd_hash={PW_HASH}")
    assert account.authenticator in answer.content.decode()
    assert kept_by_nobody(answer)


def test_create_account_answer_with_the_key_is_not_stored(client, project):
    answer = client.get(
        f"/{project.slug}/create_account.php?email_addr={EMAIL}&passwd_hash={PW_HASH}&user_name=Ada"
    )
    assert "<authenticator>" in answer.content.decode()
    assert kept_by_nobody(answer)


def test_am_get_info_answer_with_the_account_details_is_not_stored(client, project):
    account = AccountFactory(project=project, country="Iceland")
    answer = client.get(f"/{project.slug}/am_get_info.php?account_key={account.authenticator}")
    assert "<country>Iceland</country>" in answer.content.decode()
    assert kept_by_nobody(answer)
