"""Playwright on Debian's chromium, headless, against pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.conftest import require_service

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


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15000)
    yield page
    context.close()
