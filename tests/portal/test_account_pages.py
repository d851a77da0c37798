"""Account editing and password reset: each keeps the BOINC client's log-in working."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.core import mail

from apps.protocol import parse_account_reply
from apps.volunteers.models import Account, passwd_hash
from tests.factories import AccountFactory, ProjectFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(db):
    return AccountFactory(
        project=ProjectFactory(slug="ac"), name="Ada", email_addr="ada@example.com", password=PASSWORD
    )


def client_lookup(client, email: str, password: str):
    """lookup_account.php as the BOINC client calls it."""
    response = client.get(
        "/ac/lookup_account.php", {"email_addr": email, "passwd_hash": passwd_hash(password, email)}
    )
    return parse_account_reply(response.content)


def reset_link() -> str:
    [message] = mail.outbox
    base = re.escape(settings.COBBLESTONE_BASE_URL)
    return re.search(rf"{base}(/\w+/reset_passwd/\S+/)", message.body).group(1)


def test_the_header_shows_the_volunteer_after_sign_up(client):
    ProjectFactory(slug="ac")
    response = client.post(
        "/ac/signup/",
        {"name": "Grace", "email": "grace@example.org", "password": "longpassword"},
        follow=True,
    )
    body = response.content.decode()
    assert 'id="nav-account">Grace</a>' in body
    assert 'id="nav-join"' not in body


def test_name_country_and_site_are_saved(client, ada):
    log_in(client, ada)
    client.post(
        "/ac/edit_user_info.php", {"name": "Ada L.", "country": "United Kingdom", "url": "ada.example"}
    )
    row = Account.objects.get(pk=ada.pk)
    assert (row.name, row.country, row.url) == ("Ada L.", "United Kingdom", "https://ada.example")


def test_a_name_boinc_refuses_is_shown_on_the_form(client, ada):
    log_in(client, ada)
    body = client.post("/ac/edit_user_info.php", {"name": "12345"}).content.decode()
    assert "User name may not be a number." in body


def test_after_an_email_change_the_client_logs_in_with_the_new_address_and_the_session_stays(client, ada):
    log_in(client, ada)
    response = client.post(
        "/ac/edit_email.php", {"email": "ada@new.example", "password": PASSWORD}, follow=True
    )
    assert 'id="account-email">ada@new.example<' in response.content.decode()  # still logged in
    assert client_lookup(client, "ada@new.example", PASSWORD).authenticator == ada.authenticator
    assert mail.outbox[0].to == ["ada@example.com"]  # the old address is told


def test_an_email_change_with_a_wrong_password_changes_nothing(client, ada):
    log_in(client, ada)
    body = client.post(
        "/ac/edit_email.php", {"email": "ada@new.example", "password": "guess"}
    ).content.decode()
    assert "Wrong password." in body
    assert client_lookup(client, "ada@example.com", PASSWORD).authenticator == ada.authenticator


def test_a_password_change_needs_the_current_one_and_works_for_the_client(client, ada):
    log_in(client, ada)
    wrong = {"old_password": "guess", "new_password1": "new password", "new_password2": "new password"}
    assert "entered incorrectly" in client.post("/ac/edit_passwd.php", wrong).content.decode()
    client.post("/ac/edit_passwd.php", {**wrong, "old_password": PASSWORD})
    assert client_lookup(client, "ada@example.com", "new password").authenticator == ada.authenticator
    assert client_lookup(client, "ada@example.com", PASSWORD).error_num == -206


def test_a_new_password_shorter_than_the_projects_minimum_is_refused(client, ada):
    log_in(client, ada)
    body = client.post(
        "/ac/edit_passwd.php", {"old_password": PASSWORD, "new_password1": "abc", "new_password2": "abc"}
    ).content.decode()
    assert "Use at least 6 characters." in body


def test_a_password_reset_mails_a_link_that_sets_a_password_the_client_logs_in_with(client, ada):
    client.post("/ac/get_passwd.php", {"email": "ADA@example.com"})
    assert mail.outbox[0].to == ["ada@example.com"]
    form = client.get(reset_link(), follow=True)
    assert form.status_code == 200
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "fresh secret", "new_password2": "fresh secret"},
        follow=True,
    )
    assert 'id="reset-complete"' in done.content.decode()
    assert client_lookup(client, "ada@example.com", "fresh secret").authenticator == ada.authenticator


def test_a_reset_link_works_once(client, ada):
    client.post("/ac/get_passwd.php", {"email": "ada@example.com"})
    link = reset_link()
    form = client.get(link, follow=True)
    client.post(
        form.redirect_chain[-1][0], {"new_password1": "fresh secret", "new_password2": "fresh secret"}
    )
    again = client.get(link, follow=True)
    assert 'id="reset-invalid"' in again.content.decode()


def test_a_reset_for_an_unknown_address_sends_nothing_and_says_the_same(client, ada):
    response = client.post("/ac/get_passwd.php", {"email": "nobody@example.com"}, follow=True)
    assert 'id="reset-sent"' in response.content.decode()
    assert mail.outbox == []


def test_a_reset_link_of_another_projects_account_is_invalid(client, ada):
    AccountFactory(project=ProjectFactory(slug="other"), email_addr="ada@example.com")
    client.post("/other/get_passwd.php", {"email": "ada@example.com"})
    link = reset_link().replace("/other/", "/ac/")
    assert 'id="reset-invalid"' in client.get(link, follow=True).content.decode()


@pytest.mark.parametrize("uid", ["!!", "OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk", "YWJj"])
def test_a_forged_reset_link_is_invalid_not_an_error(client, ada, uid):
    response = client.get(f"/ac/reset_passwd/{uid}/abc-def/", follow=True)
    assert response.status_code == 200
    assert 'id="reset-invalid"' in response.content.decode()
