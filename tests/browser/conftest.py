"""Playwright on Debian's chromium, headless, against pytest-django's live server (the session's
``browser`` is in tests/conftest.py, shared with the production tests)."""

from __future__ import annotations

import re

import pytest


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
