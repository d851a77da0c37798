"""Staff log-ins, the admin's and the API's HTTP Basic, are limited as volunteers' are: a
guesser is refused after the limit, the right password too, while the owner logging in
from an address known to the account is not; each limit reached is listed in the admin."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client

from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

PASSWORD = "staff-secret-1"
OWNER_IP = "192.0.2.10"


@pytest.fixture
def operator(db):
    ProjectFactory(slug="ops")
    return get_user_model().objects.create_superuser("operator", "op@example.org", PASSWORD)


def admin_login(client: Client, password: str, *, ip: str = "198.51.100.1"):
    return client.post(
        "/admin/login/?next=/admin/",
        {"username": "operator", "password": password},
        REMOTE_ADDR=ip,
    )


def api_get(client: Client, password: str, *, ip: str = "198.51.100.1"):
    token = base64.b64encode(f"operator:{password}".encode()).decode()
    return client.get("/api/v1/projects/ops/workunits/", HTTP_AUTHORIZATION=f"Basic {token}", REMOTE_ADDR=ip)


def test_the_admin_log_in_is_refused_after_many_wrong_passwords(client, operator):
    for _ in range(30):
        admin_login(client, "wrong")
    response = admin_login(client, PASSWORD)
    assert response.status_code == 200  # the form again, not the redirect into the admin
    assert "Too many failed log-ins. Try again in" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_admin_log_in_works_after_a_few_wrong_passwords(client, operator):
    for _ in range(3):
        admin_login(client, "wrong")
    assert admin_login(client, PASSWORD).status_code == 302


def test_api_basic_authentication_is_refused_after_many_wrong_passwords(client, operator):
    assert api_get(client, "wrong").status_code == 403
    for _ in range(29):
        api_get(client, "wrong")
    response = api_get(client, PASSWORD)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many failed log-ins" in response.json()["detail"]


def test_api_basic_authentication_works_with_the_right_password(client, operator):
    assert api_get(client, PASSWORD).status_code == 200


def test_admin_and_api_failures_count_together(client, operator):
    for _ in range(5):
        api_get(client, "wrong")
    assert "Too many failed log-ins" in admin_login(client, PASSWORD).content.decode()


def test_the_operator_logs_in_from_a_known_address_while_guesses_come_from_many(client, operator):
    assert admin_login(Client(), PASSWORD, ip=OWNER_IP).status_code == 302
    for i in range(40):
        api_get(client, "wrong", ip=f"198.51.100.{i // 5}")
    assert api_get(client, PASSWORD, ip="203.0.113.5").status_code == 429  # an address never used
    assert admin_login(Client(), PASSWORD, ip=OWNER_IP).status_code == 302


def test_a_reached_limit_is_listed_in_the_admin(client, operator):
    from apps.volunteers.models import LoginLockout

    for _ in range(5):
        admin_login(client, "wrong", ip="198.51.100.77")
    lockout = LoginLockout.objects.get(kind=LoginLockout.Kind.ADDRESS_ACCOUNT)
    assert (lockout.scope, lockout.account, lockout.address) == ("staff", "operator", "198.51.100.77")
    staff = Client()
    staff.force_login(operator)
    page = staff.get("/admin/volunteers/loginlockout/").content.decode()
    assert "198.51.100.77" in page
    assert "operator" in page


def test_a_new_lockout_record_deletes_those_older_than_ninety_days(client, operator):
    from datetime import timedelta

    from django.utils import timezone

    from apps.volunteers.models import LoginLockout

    now = timezone.now()
    for age_days, address in ((100, "198.51.100.9"), (80, "198.51.100.10")):
        LoginLockout.objects.create(
            scope="staff",
            kind=LoginLockout.Kind.ADDRESS,
            address=address,
            time=now - timedelta(days=age_days),
            until=now - timedelta(days=age_days) + timedelta(minutes=10),
        )
    for _ in range(5):
        admin_login(client, "wrong", ip="198.51.100.78")
    addresses = sorted(LoginLockout.objects.values_list("address", flat=True))
    assert addresses == ["198.51.100.10", "198.51.100.78"]


def test_authenticate_without_a_request_is_not_limited(operator):
    assert authenticate(username="operator", password=PASSWORD) == operator
