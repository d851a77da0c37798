"""Volunteer sign-up and log-in pages: the way a volunteer finds the account key."""

from __future__ import annotations

import pytest
from django.core import mail
from django.test import Client

from apps.volunteers.models import Account, passwd_hash
from tests.factories import AccountFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def signup(client: Client, project, **fields: str):
    data = {"name": "Ada", "email": "Ada@Example.org", "password": "longpassword", **fields}
    return client.post(f"/{project.slug}/signup/", data)


def test_signup_creates_an_account_and_shows_its_key(client, project):
    response = signup(client, project)
    assert response.status_code == 302
    assert response["Location"] == f"/{project.slug}/account/"
    account = Account.objects.get(project=project)
    assert (account.name, account.email_addr) == ("Ada", "ada@example.org")
    assert account.check_passwd_hash(passwd_hash("longpassword", "ada@example.org")) is True
    page = client.get(response["Location"]).content.decode()
    assert f'<code class="key" id="account-key">{account.authenticator}</code>' in page
    assert f"boinccmd --project_attach {project.master_url} {account.authenticator}" in page


def test_signup_page_is_a_mobile_friendly_form(client, project):
    page = client.get(f"/{project.slug}/signup/").content.decode()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert 'type="password"' in page
    assert "At least 6 characters." in page


def test_signup_enforces_the_minimum_password_length(client, project):
    project.min_passwd_length = 12
    project.save()
    response = signup(client, project, password="short")
    assert response.status_code == 200
    assert "Use at least 12 characters." in response.content.decode()
    assert not Account.objects.exists()


def test_signup_with_a_taken_email_does_not_say_so_and_mails_the_owner(client, project):
    AccountFactory(project=project, email_addr="ada@example.org")
    response = signup(client, project)
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="signup-sent"' in body
    assert "already" not in body
    assert Account.objects.count() == 1
    [message] = mail.outbox
    assert message.to == ["ada@example.org"]
    assert f"{project.master_url}account/" in message.body


def test_signup_with_a_bad_name_is_refused(client, project):
    response = signup(client, project, name="<b>Ada</b>")
    assert "HTML tags" in response.content.decode()
    assert not Account.objects.exists()


def test_signup_is_closed_when_account_creation_is_disabled(client, project):
    project.account_creation_disabled = True
    project.save()
    assert "not accepting new accounts" in client.get(f"/{project.slug}/signup/").content.decode()
    signup(client, project)
    assert not Account.objects.exists()


def test_login_shows_the_account_key(client, project):
    account = AccountFactory(
        project=project, email_addr="bob@example.org", passwd_hash=passwd_hash("pw123456", "bob@example.org")
    )
    assert b'type="password"' in client.get(f"/{project.slug}/account/").content
    response = client.post(f"/{project.slug}/account/", {"email": "Bob@example.org", "password": "pw123456"})
    assert response.status_code == 302
    assert account.authenticator in client.get(f"/{project.slug}/account/").content.decode()


def test_login_with_a_wrong_password_shows_no_key(client, project):
    account = AccountFactory(project=project, email_addr="bob@example.org")
    response = client.post(f"/{project.slug}/account/", {"email": "bob@example.org", "password": "wrong"})
    body = response.content.decode()
    assert "Wrong email or password." in body
    assert account.authenticator not in body


def test_logout_forgets_the_account(client, project):
    signup(client, project)
    key = Account.objects.get().authenticator
    assert client.get(f"/{project.slug}/account/logout/").status_code == 405
    client.post(f"/{project.slug}/account/logout/")
    assert key not in client.get(f"/{project.slug}/account/").content.decode()


def test_login_is_per_project(client, project):
    signup(client, project)
    other = ProjectFactory(slug="other")
    page = client.get(f"/{other.slug}/account/").content.decode()
    assert Account.objects.get().authenticator not in page
    assert 'type="password"' in page


def test_password_change_ends_the_session(client, project):
    signup(client, project)
    account = Account.objects.get()
    account.set_password("a-new-password")
    account.save()
    assert account.authenticator not in client.get(f"/{project.slug}/account/").content.decode()


def test_unknown_project_pages_are_404(client, db):
    assert client.get("/nope/signup/").status_code == 404
    assert client.get("/nope/account/").status_code == 404
