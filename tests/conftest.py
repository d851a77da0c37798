"""Shared fixtures: a few, named for what they give."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# pytest-django's live server binds to this address in every session, whichever directories it
# collects: 127.0.0.1 is what the stock BOINC client needs (it refuses host names without a dot,
# such as localhost), and every other live-server test can use it as well.
os.environ.setdefault("DJANGO_LIVE_TEST_SERVER_ADDRESS", "127.0.0.1")

# Property tests check results, not speed (speed is the benchmarks' business): on a loaded
# machine an example over Hypothesis's default 200 ms deadline would fail them as flaky.
hypothesis_settings.register_profile("cobblestone", deadline=None)
hypothesis_settings.load_profile("cobblestone")


@pytest.fixture(autouse=True)
def _data_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    """Every test gets its own download/upload/results areas (pure tests need none)."""
    if not request.config.pluginmanager.hasplugin("django"):
        return None
    settings = request.getfixturevalue("settings")
    settings.COBBLESTONE_DATA_DIR = tmp_path / "data"
    return settings.COBBLESTONE_DATA_DIR


@pytest.fixture(autouse=True)
def _static_files_without_manifest(request: pytest.FixtureRequest) -> None:
    """Pages name their static files through collectstatic's manifest in production; tests run
    without collectstatic, so they use the same storage without hashed names."""
    if request.config.pluginmanager.hasplugin("django"):
        settings = request.getfixturevalue("settings")
        settings.STORAGES = {
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
        }


@pytest.fixture(autouse=True)
def _fresh_scheduler_catalog(request: pytest.FixtureRequest) -> None:
    """The scheduler's per-process catalog cache must not carry rows from one test to the next."""
    if request.config.pluginmanager.hasplugin("django"):
        from apps.scheduler.services.catalog import catalog_clear
        from apps.scheduler.services.dispatch import unsendable_logged_clear

        catalog_clear()
        unsendable_logged_clear()


@pytest.fixture(autouse=True)
def _fast_password_hasher(request: pytest.FixtureRequest) -> None:
    """Real password hashers are slow by design and tests make many passwords; the tests of
    password storage ask for the real one (the ``real_password_hasher`` marker)."""
    if request.config.pluginmanager.hasplugin("django") and not request.node.get_closest_marker(
        "real_password_hasher"
    ):
        request.getfixturevalue("settings").PASSWORD_HASHERS = [
            "django.contrib.auth.hashers.MD5PasswordHasher"
        ]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    request: pytest.FixtureRequest, django_db_modify_db_settings_parallel_suffix: None
) -> None:
    """The settings name the test database after the process, so that runs side by side never
    share one; with ``--reuse-db`` it keeps one name from run to run, so it is kept and reused."""
    if not request.config.getoption("reuse_db"):
        return
    from django.conf import settings

    test = settings.DATABASES["default"]["TEST"]
    head, pid, tail = test["NAME"].rpartition(str(os.getpid()))
    if pid:
        test["NAME"] = f"{head}reused{tail}"


@pytest.fixture
def now() -> datetime:
    return datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)


def service_url(name: str) -> str | None:
    """A real service started by .ci/services.sh (var/services.env), or None."""
    return os.environ.get(name) or None


def require_service(name: str, what: str) -> str:
    """The URL/path of a real part, or skip with a reason (a failure when CI is set)."""
    value = service_url(name)
    if value:
        return value
    message = f"{what} is not available ({name} unset; `make test` starts it when it can)"
    if os.environ.get("CI"):
        pytest.fail(f"{message}, and CI is set")
    pytest.skip(message)


# --- Debian's chromium through Playwright: one per session, for every suite that drives it ---

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    executable = require_service("COBBLESTONE_TEST_CHROMIUM", "Debian's chromium")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop; Django must allow ORM calls from the test thread.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def _private_cache(request: pytest.FixtureRequest) -> None:
    """Each test gets an empty cache of its own: the rate limits count in the cache, and
    counts left by one test (or by another test process sharing var/) must not block the next."""
    if request.config.pluginmanager.hasplugin("django"):
        request.getfixturevalue("settings").CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                "LOCATION": f"test-{request.node.nodeid}",
            }
        }


@pytest.fixture(autouse=True)
def _no_load_shedding(request: pytest.FixtureRequest) -> None:
    """In-process tests run many RPCs at once on a loaded machine to test other things; the
    load-shedding tests turn it on (servers the tests start keep the settings' default)."""
    if request.config.pluginmanager.hasplugin("django"):
        request.getfixturevalue("settings").COBBLESTONE_SCHED_SLOTS = 0
