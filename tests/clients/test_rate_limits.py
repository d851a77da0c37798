"""Limits on guessing: the account RPCs answer ERR_RETRY (-199) with how long to wait, the
forms a plain message; a volunteer who mistypes a few times is never held up."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.protocol import parse_account_reply
from apps.volunteers.models import Account, passwd_hash
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db

EMAIL = "vol@example.org"
PASSWORD = "rightpassword"
ERR_RETRY = -199


@pytest.fixture
def account(project):
    return AccountFactory(project=project, email_addr=EMAIL, passwd_hash=passwd_hash(PASSWORD, EMAIL))


@pytest.fixture
def limits(settings):
    settings.COBBLESTONE_RATELIMIT_LOGIN_IP = "3/15m"
    settings.COBBLESTONE_RATELIMIT_LOGIN_ACCOUNT = "5/h"
    settings.COBBLESTONE_RATELIMIT_SIGNUP_IP = "2/h"
    return settings


def lookup(client: Client, project, password: str, *, email: str = EMAIL, ip: str = "192.0.2.1"):
    query = f"email_addr={email}&passwd_hash={passwd_hash(password, email)}"
    response = client.get(f"/{project.slug}/lookup_account.php?{query}", REMOTE_ADDR=ip)
    assert response.status_code == 200  # the client reads the body of a 200 only
    return response, parse_account_reply(response.content)


def create(client: Client, project, email: str, *, password: str = PASSWORD, ip: str = "192.0.2.1"):
    query = f"email_addr={email}&passwd_hash={passwd_hash(password, email)}&user_name=New"
    response = client.get(f"/{project.slug}/create_account.php?{query}", REMOTE_ADDR=ip)
    return response, parse_account_reply(response.content)


def test_a_volunteer_who_mistypes_a_few_times_still_logs_in_with_the_defaults(client, project, account):
    for _ in range(5):
        assert lookup(client, project, "wrong")[1].error_num == -206
    assert lookup(client, project, PASSWORD)[1].authenticator == account.authenticator


def test_failed_lookups_past_the_limit_are_refused_even_with_the_right_password(
    client, project, account, limits
):
    for _ in range(3):
        assert lookup(client, project, "wrong")[1].error_num == -206
    response, reply = lookup(client, project, PASSWORD)
    assert reply.error_num == ERR_RETRY
    assert reply.authenticator is None
    wait = int(response["Retry-After"])
    assert 0 < wait <= 15 * 60
    assert "try again in" in (reply.error_msg or "")


def test_successful_lookups_count_nothing(client, project, account, limits):
    for _ in range(10):
        assert lookup(client, project, PASSWORD)[1].authenticator == account.authenticator


def test_unknown_emails_count_as_failures(client, project, account, limits):
    for i in range(3):
        assert lookup(client, project, "x", email=f"nobody{i}@example.org")[1].error_num == -136
    assert lookup(client, project, PASSWORD)[1].error_num == ERR_RETRY


def test_another_address_is_not_held_up_by_a_guesser(client, project, account, limits):
    for _ in range(3):
        lookup(client, project, "wrong", ip="198.51.100.7")
    assert lookup(client, project, PASSWORD, ip="192.0.2.1")[1].authenticator == account.authenticator


def test_guesses_at_one_account_from_many_addresses_are_limited(client, project, account, limits):
    for i in range(5):
        lookup(client, project, "wrong", ip=f"198.51.100.{i}")
    assert lookup(client, project, PASSWORD, ip="192.0.2.1")[1].error_num == ERR_RETRY


def test_account_creation_past_the_limit_is_refused(client, project, limits):
    assert create(client, project, "a@example.org")[1].authenticator
    assert create(client, project, "b@example.org")[1].authenticator
    response, reply = create(client, project, "c@example.org")
    assert reply.error_num == ERR_RETRY
    assert int(response["Retry-After"]) > 0
    assert not Account.objects.filter(email_addr="c@example.org").exists()


def test_create_account_on_a_taken_email_counts_as_a_failed_log_in(client, project, account, limits):
    limits.COBBLESTONE_RATELIMIT_SIGNUP_IP = "100/h"
    for _ in range(3):
        assert create(client, project, EMAIL, password="guess")[1].error_num == -137
    assert create(client, project, EMAIL)[1].error_num == ERR_RETRY


def test_login_form_past_the_limit_shows_a_plain_message(client, project, account, limits):
    url = f"/{project.slug}/account/"
    for _ in range(3):
        assert (
            "Wrong email or password"
            in client.post(url, {"email": EMAIL, "password": "wrong"}).content.decode()
        )
    response = client.post(url, {"email": EMAIL, "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed log-ins. Try again in" in response.content.decode()
    assert account.authenticator not in response.content.decode()


def test_signup_form_past_the_limit_shows_a_plain_message(client, project, limits):
    url = f"/{project.slug}/signup/"
    for i in range(2):
        data = {"name": f"Ada{i}", "email": f"ada{i}@example.org", "password": "longpassword"}
        assert Client().post(url, data).status_code == 302
    response = client.post(url, {"name": "Eve", "email": "eve@example.org", "password": "longpassword"})
    assert response.status_code == 429
    assert "Too many attempts; try again in" in response.content.decode()
    assert not Account.objects.filter(email_addr="eve@example.org").exists()


def test_a_cache_that_cannot_be_reached_limits_nothing(client, project, account, limits):
    limits.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # the discard port: nothing answers
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    for _ in range(4):
        lookup(client, project, "wrong")
    assert lookup(client, project, PASSWORD)[1].authenticator == account.authenticator


def test_limits_hold_in_the_file_cache_make_run_uses(client, project, account, limits, tmp_path):
    limits.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path),
        }
    }
    for _ in range(3):
        lookup(client, project, "wrong")
    assert lookup(client, project, PASSWORD)[1].error_num == ERR_RETRY


@pytest.mark.redis
def test_limits_hold_in_redis(client, project, account, limits):
    from tests.conftest import require_service

    url = require_service("COBBLESTONE_TEST_REDIS_URL", "Redis")
    limits.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": f"ratelimit-test-{id(client)}",
        }
    }
    for _ in range(3):
        lookup(client, project, "wrong")
    assert lookup(client, project, PASSWORD)[1].error_num == ERR_RETRY


# --- the owner is not locked out by guesses from elsewhere ---------------------------------


def test_the_owner_attaches_from_a_known_address_after_fifty_guesses_from_elsewhere(client, project, account):
    assert lookup(client, project, PASSWORD, ip="192.0.2.1")[1].authenticator == account.authenticator
    for i in range(60):
        lookup(client, project, "wrong", ip=f"198.51.100.{i // 10}")
    assert lookup(client, project, PASSWORD, ip="192.0.2.1")[1].authenticator == account.authenticator


def test_the_owner_logs_in_on_the_web_from_a_known_address_after_guesses_from_elsewhere(
    client, project, account, limits
):
    url = f"/{project.slug}/account/"
    assert Client().post(url, {"email": EMAIL, "password": PASSWORD}).status_code == 302
    for i in range(10):
        lookup(client, project, "wrong", ip=f"198.51.100.{i}")
    assert lookup(client, project, PASSWORD, ip="203.0.113.9")[1].error_num == ERR_RETRY
    assert Client().post(url, {"email": EMAIL, "password": PASSWORD}).status_code == 302


def test_guesses_from_a_known_address_are_still_limited_there(client, project, account, limits):
    limits.COBBLESTONE_RATELIMIT_LOGIN_IP_ACCOUNT = "2/15m"
    assert lookup(client, project, PASSWORD)[1].authenticator == account.authenticator
    for _ in range(2):
        lookup(client, project, "wrong")
    assert lookup(client, project, PASSWORD)[1].error_num == ERR_RETRY


def test_a_lookup_without_a_password_does_not_make_an_address_known(client, project, account, limits):
    client.get(f"/{project.slug}/lookup_account.php?email_addr={EMAIL}", REMOTE_ADDR="198.51.100.99")
    for i in range(5):
        lookup(client, project, "wrong", ip=f"198.51.100.{i}")
    assert lookup(client, project, PASSWORD, ip="198.51.100.99")[1].error_num == ERR_RETRY


def test_a_reached_limit_is_recorded(client, project, account, limits):
    from apps.volunteers.models import LoginLockout

    for _ in range(3):
        lookup(client, project, "wrong", ip="198.51.100.3")
    lockout = LoginLockout.objects.get()
    assert (lockout.scope, lockout.kind, lockout.address) == ("volunteer", "address", "198.51.100.3")
    assert lockout.until > lockout.time


def test_lookups_without_a_password_count_as_failed_log_ins(client, project, account, limits):
    for _ in range(3):
        client.get(f"/{project.slug}/lookup_account.php?email_addr={EMAIL}", REMOTE_ADDR="198.51.100.8")
    assert lookup(client, project, PASSWORD, ip="198.51.100.8")[1].error_num == ERR_RETRY
