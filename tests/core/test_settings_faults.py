"""Settings of the fault and load handling (boincproj/settings.py), in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNSET = ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "CACHE_URL", "DATABASE_URL")


def load(expression: str, *, apps: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """``expression`` in a fresh interpreter with the settings loaded (reading one setting loads
    the module, at a fifth of the CPU time of django.setup()), and with the apps when asked."""
    setup = "import django; django.setup();" if apps else "settings.DEBUG;"
    code = f"import json; from django.conf import settings; {setup} print(json.dumps({expression}))"
    base = {
        k: v for k, v in os.environ.items() if k not in UNSET and not k.startswith("COBBLESTONE_RATELIMIT")
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "boincproj.settings", **env},
        capture_output=True,
        text=True,
    )


def value(expression: str, *, apps: bool = False, **env: str) -> object:
    done = load(expression, apps=apps, **env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_debug_is_off_unless_turned_on():
    assert value("settings.DEBUG", SECRET_KEY="k" * 50) is False
    assert value("settings.DEBUG", DEBUG="true") is True


def test_without_debug_a_secret_key_is_required():
    done = load("settings.DEBUG")
    assert done.returncode != 0
    assert "SECRET_KEY is required when DEBUG is off" in done.stderr


def test_the_secret_key_can_come_from_a_file(tmp_path):
    key = tmp_path / "secret_key"
    key.write_text("from-a-file-" + "k" * 40 + "\n")
    assert value("settings.SECRET_KEY", SECRET_KEY_FILE=str(key)) == "from-a-file-" + "k" * 40


def test_the_cache_is_files_under_var_by_default_and_redis_when_named(tmp_path):
    default = value("settings.CACHES['default']", DEBUG="true", COBBLESTONE_VAR_DIR=str(tmp_path))
    assert default == {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(tmp_path / "cache"),
    }
    redis = value("settings.CACHES['default']", DEBUG="true", CACHE_URL="redis://127.0.0.1:6379/3")
    assert (redis["BACKEND"], redis["LOCATION"]) == (
        "django.core.cache.backends.redis.RedisCache",
        "redis://127.0.0.1:6379/3",
    )


def test_a_cache_url_of_another_kind_is_refused():
    done = load("1", DEBUG="true", CACHE_URL="memcached://127.0.0.1:11211")
    assert "CACHE_URL must be" in done.stderr


def test_rates_are_checked_and_can_be_turned_off():
    assert value("settings.COBBLESTONE_RATELIMIT_LOGIN_IP", DEBUG="true") == "20/15m"
    assert (
        value("settings.COBBLESTONE_RATELIMIT_LOGIN_IP", DEBUG="true", COBBLESTONE_RATELIMIT_LOGIN_IP="off")
        is None
    )
    done = load("1", DEBUG="true", COBBLESTONE_RATELIMIT_SIGNUP_IP="twenty an hour")
    assert "COBBLESTONE_RATELIMIT_SIGNUP_IP must look like" in done.stderr


def test_postgresql_connections_are_health_checked_and_time_out():
    database = value(
        "settings.DATABASES['default']", DEBUG="true", DATABASE_URL="postgres://u@127.0.0.1:5432/db"
    )
    assert database["CONN_HEALTH_CHECKS"] is True
    assert database["OPTIONS"]["connect_timeout"] == 5


def test_the_worker_writes_results_with_the_reconnecting_backend_as_the_environment_file_names_it():
    # deploy/cobblestone.env.example sets CELERY_RESULT_BACKEND=django-db, and Celery reads
    # that variable before any setting.
    backend = (
        "(lambda c: c.__module__ + '.' + c.__name__)(type(__import__('boincproj.celery').celery.app.backend))"
    )
    expected = "boincproj.results.DatabaseBackend"
    assert value(backend, apps=True, DEBUG="true", CELERY_RESULT_BACKEND="django-db") == expected
    assert value(backend, apps=True, DEBUG="true") == expected
