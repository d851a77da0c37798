"""Two-factor log-in for staff (COBBLESTONE_STAFF_OTP): the admin asks for a one-time password
from the user's TOTP device, and the API then takes no HTTP Basic log-in."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

PASSWORD = "staff-secret-1"


@pytest.fixture
def operator(db):
    ProjectFactory(slug="ops")
    return get_user_model().objects.create_superuser("operator", "op@example.org", PASSWORD)


@pytest.fixture
def otp_on(settings):
    settings.COBBLESTONE_STAFF_OTP = True
    return settings


def current_token(device: TOTPDevice) -> str:
    return str(TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift).token()).zfill(
        device.digits
    )


def admin_login(client: Client, **fields: str):
    return client.post("/admin/login/?next=/admin/", {"username": "operator", "password": PASSWORD, **fields})


def test_the_admin_asks_for_a_one_time_password_from_the_device(client, operator, otp_on):
    device = TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    response = admin_login(client, otp_device=device.persistent_id, otp_token=current_token(device))
    assert response.status_code == 302, response.context["form"].errors
    assert client.get("/admin/").status_code == 200


def test_the_password_alone_does_not_open_the_admin(client, operator, otp_on):
    device = TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    response = admin_login(client, otp_device=device.persistent_id, otp_token="")
    assert response.status_code == 200
    assert client.get("/admin/").status_code == 302  # back to the log-in page


def test_a_wrong_one_time_password_does_not_open_the_admin(client, operator, otp_on):
    device = TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    wrong = str((int(current_token(device)) + 1) % 10**6).zfill(6)
    admin_login(client, otp_device=device.persistent_id, otp_token=wrong)
    assert client.get("/admin/").status_code == 302


def test_a_user_without_a_device_cannot_enter(client, operator, otp_on):
    admin_login(client)
    assert client.get("/admin/").status_code == 302


def test_the_api_takes_no_basic_log_in_with_two_factor_on(client, operator, otp_on):
    token = base64.b64encode(f"operator:{PASSWORD}".encode()).decode()
    response = client.get("/api/v1/projects/ops/workunits/", HTTP_AUTHORIZATION=f"Basic {token}")
    assert response.status_code == 403


def test_the_api_takes_the_admins_verified_session(client, operator, otp_on):
    device = TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    admin_login(client, otp_device=device.persistent_id, otp_token=current_token(device))
    assert client.get("/api/v1/projects/ops/workunits/").status_code == 200


def test_without_the_setting_the_password_is_enough(client, operator):
    TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    assert admin_login(client).status_code == 302
    assert client.get("/admin/").status_code == 200


def test_a_device_is_enrolled_in_the_admin_with_its_qr_code(client, operator):
    client.force_login(operator)
    assert client.get("/admin/otp_totp/totpdevice/add/").status_code == 200
    device = TOTPDevice.objects.create(user=operator, name="phone", confirmed=True)
    qr = client.get(f"/admin/otp_totp/totpdevice/{device.pk}/qrcode/")
    assert qr.status_code == 200
    assert qr["Content-Type"].startswith("image/svg+xml")
