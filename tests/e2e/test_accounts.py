"""boinccmd's account RPCs against the project: lookup (right and wrong password), create, config."""

from __future__ import annotations

import time

import pytest

from apps.volunteers.models import Account, passwd_hash
from tests.e2e.conftest import EMAIL, PASSWORD, make_e2e_project

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_boinccmd_account_lookup_create_and_project_config(boinc_client, base_url):
    started = time.monotonic()
    e2e = make_e2e_project(slug="accounts")
    client = boinc_client()
    client.start()  # not attached to anything

    # The client lowercases the email and sends md5(password + email), with '.' as %2E.
    right = client.cmd("--lookup_account", e2e.master_url, EMAIL.upper(), PASSWORD).stdout
    assert f"account key: {e2e.account.authenticator}" in right
    wrong = client.cmd("--lookup_account", e2e.master_url, EMAIL, "not-the-password", check=False).stdout
    assert e2e.account.authenticator not in wrong
    assert "poll status: bad password" in wrong  # boincerror(-206)
    unknown = client.cmd("--lookup_account", e2e.master_url, "nobody@example.com", "x", check=False).stdout
    assert "poll status: no database rows found" in unknown  # boincerror(-136)

    created = client.cmd(
        "--create_account", e2e.master_url, "New@Example.org", "newpassword", "Newbie"
    ).stdout
    account = Account.objects.get(project=e2e.project, email_addr="new@example.org")
    assert f"account key: {account.authenticator}" in created
    assert account.name == "Newbie"
    assert account.check_passwd_hash(passwd_hash("newpassword", "new@example.org")) is True

    config = client.cmd("--get_project_config", e2e.master_url).stdout
    assert f"name: {e2e.project.name}" in config
    assert f"min_passwd_length: {e2e.project.min_passwd_length}" in config
    assert time.monotonic() - started < 60
