"""Whether an address has an account: the web log-in form tells no one, by its words or by
its time; lookup_account.php keeps BOINC's error numbers, which the client shows."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from apps.protocol import parse_account_reply
from apps.volunteers.hashers import BoincBCryptSHA256PasswordHasher
from apps.volunteers.models import passwd_hash
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db

EMAIL = "vol@example.org"
PASSWORD = "rightpassword"
CSRF_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


@pytest.fixture
def hash_checks(monkeypatch):
    """Each bcrypt hash the project's hasher computed: one for a new hash, one for a check
    (its verify encodes the candidate with the stored salt)."""
    calls: list[str] = []
    original = BoincBCryptSHA256PasswordHasher.encode

    def counted(self, *args, **kwargs):
        calls.append("encode")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BoincBCryptSHA256PasswordHasher, "encode", counted)
    return calls


def log_in(client: Client, project, email: str, password: str):
    return client.post(f"/{project.slug}/account/", {"email": email, "password": password})


@pytest.mark.real_password_hasher
def test_a_log_in_with_an_unknown_address_costs_a_password_hash_as_a_wrong_password_does(
    client, project, hash_checks
):
    AccountFactory(project=project, email_addr=EMAIL, password=PASSWORD)
    hash_checks.clear()
    log_in(client, project, EMAIL, "wrong password")
    known = len(hash_checks)
    hash_checks.clear()
    log_in(client, project, "nobody@example.org", "wrong password")
    assert known == len(hash_checks) == 1


def test_the_log_in_form_says_the_same_for_an_unknown_address_and_a_wrong_password(client, project):
    AccountFactory(project=project, email_addr=EMAIL, password=PASSWORD)
    wrong = log_in(client, project, EMAIL, "wrong password")
    unknown = log_in(client, project, "nobody@example.org", "wrong password")
    assert wrong.status_code == unknown.status_code == 200

    def page(response, email: str) -> str:
        return CSRF_TOKEN.sub("", response.content.decode().replace(email, "X"))

    assert page(wrong, EMAIL) == page(unknown, "nobody@example.org")


def test_lookup_account_keeps_boincs_error_numbers_for_the_client(client, project):
    AccountFactory(project=project, email_addr=EMAIL, password=PASSWORD)

    def lookup(email: str) -> int | None:
        query = {"email_addr": email, "passwd_hash": passwd_hash("wrong password", email)}
        return parse_account_reply(client.get(f"/{project.slug}/lookup_account.php", query).content).error_num

    assert lookup("nobody@example.org") == -136
    assert lookup(EMAIL) == -206
