"""The account pages that check a password or send mail hold back a guesser: wrong current
passwords count as failed log-ins, reset emails are limited, and the reset link names the
project's own address whatever Host the request came with."""

from __future__ import annotations

import pytest
from django.core import mail

from apps.protocol import parse_account_reply
from apps.volunteers.models import passwd_hash
from tests.factories import AccountFactory, ProjectFactory
from tests.portal.volunteer_helpers import PASSWORD, log_in

pytestmark = pytest.mark.django_db

ERR_RETRY = -199


@pytest.fixture
def ada(db):
    return AccountFactory(
        project=ProjectFactory(slug="ac"), name="Ada", email_addr="ada@example.com", password=PASSWORD
    )


def change_password(client, old: str):
    return client.post(
        "/ac/edit_passwd.php",
        {"old_password": old, "new_password1": "brand new secret", "new_password2": "brand new secret"},
    )


def change_email(client, password: str):
    return client.post("/ac/edit_email.php", {"email": "new@example.com", "password": password})


@pytest.mark.parametrize("change", [change_password, change_email])
def test_a_change_asking_the_password_is_refused_after_many_wrong_ones(client, ada, change):
    log_in(client, ada)
    for _ in range(25):
        change(client, "wrong guess")
    response = change(client, PASSWORD)
    assert response.status_code == 429
    assert "Too many failed log-ins. Try again in" in response.content.decode()
    ada.refresh_from_db()
    assert ada.email_addr == "ada@example.com"
    assert ada.check_passwd_hash(passwd_hash(PASSWORD, ada.email_addr))


def test_a_few_wrong_current_passwords_do_not_hold_the_volunteer_up(client, ada):
    log_in(client, ada)
    for _ in range(3):
        change_password(client, "wrong guess")
    assert change_password(client, PASSWORD).status_code == 302


def test_wrong_current_passwords_count_toward_the_log_in_limits(client, ada):
    log_in(client, ada)
    for _ in range(10):
        change_email(client, "wrong guess")
    query = {"email_addr": ada.email_addr, "passwd_hash": passwd_hash(PASSWORD, ada.email_addr)}
    reply = parse_account_reply(client.get("/ac/lookup_account.php", query).content)
    assert reply.error_num == ERR_RETRY


def test_reset_emails_to_one_address_are_limited_and_the_page_says_the_same(client, ada):
    for i in range(25):
        response = client.post(
            "/ac/get_passwd.php", {"email": "ada@example.com"}, follow=True, REMOTE_ADDR=f"198.51.100.{i}"
        )
        assert 'id="reset-sent"' in response.content.decode()
    assert len(mail.outbox) == 3


def test_reset_requests_from_one_client_are_limited(client, ada, settings):
    settings.COBBLESTONE_RATELIMIT_RESET_MAIL_IP = "2/h"
    for i in range(2):
        client.post("/ac/get_passwd.php", {"email": f"someone{i}@example.com"})
    response = client.post("/ac/get_passwd.php", {"email": "ada@example.com"})
    assert response.status_code == 429
    assert "Too many requests for a reset link. Try again in" in response.content.decode()
    assert mail.outbox == []


def test_the_reset_link_names_the_projects_address_not_the_requests_host(client, ada):
    client.post("/ac/get_passwd.php", {"email": "ada@example.com"}, HTTP_HOST="testserver:6666")
    [message] = mail.outbox
    assert "testserver" not in message.body
    assert f"{ada.project.master_url}reset_passwd/" in message.body
