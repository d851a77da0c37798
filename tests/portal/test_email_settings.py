"""Email settings from the environment: the console unless an SMTP server is named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def email_setting(name: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = f"from django.conf import settings; print(settings.{name})"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("EMAIL_")}
    return subprocess.run(
        # Reading the setting loads the settings module alone, without django.setup()'s apps.
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "boincproj.settings", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_email_goes_to_the_console_by_default():
    out = email_setting("EMAIL_BACKEND")
    assert out.stdout.strip().splitlines()[-1] == "django.core.mail.backends.console.EmailBackend"


def test_an_smtp_host_sends_through_smtp():
    out = email_setting("EMAIL_BACKEND", EMAIL_HOST="mail.example.org")
    assert out.stdout.strip().splitlines()[-1] == "django.core.mail.backends.smtp.EmailBackend"


def test_tls_and_ssl_together_are_refused():
    out = email_setting("EMAIL_BACKEND", EMAIL_USE_TLS="true", EMAIL_USE_SSL="true")
    assert out.returncode != 0
    assert "EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive" in out.stderr
