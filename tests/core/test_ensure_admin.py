"""manage.py ensure_admin prints the admin login under the portal's public base URL."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(settings, tmp_path, monkeypatch):
    settings.VAR_DIR = tmp_path
    monkeypatch.setenv("ADMIN_PASSWORD", "s3cret-pw")
    return tmp_path


def test_admin_url_follows_the_base_url(settings, var_dir):
    settings.COBBLESTONE_BASE_URL = "https://boinc.example.org:8443"
    out = StringIO()
    call_command("ensure_admin", stdout=out)
    assert (
        "Admin login: https://boinc.example.org:8443/admin/  user 'admin'  password 's3cret-pw'"
        in out.getvalue()
    )
