"""Playwright on Debian's chromium, headless, against pytest-django's live server."""

from __future__ import annotations

import os
import re
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


def admin_login(page, base_url: str, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
    """Log into the admin and wait until the index page is shown (the session is set)."""
    from playwright.sync_api import expect

    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()
    expect(page).not_to_have_url(re.compile(r"/admin/login/"))
