"""Playwright on Debian's chromium, headless, against pytest-django's live server (the session's
``browser`` is in tests/conftest.py, shared with the production tests)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15000)
    yield page
    context.close()


def admin_login(page, base_url: str, username: str, password: str) -> None:
    """Log into the admin and wait until the index page is shown (the session is set)."""
    from playwright.sync_api import expect

    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#site-name")).to_be_visible()
    expect(page).not_to_have_url(re.compile(r"/admin/login/"))


ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts" / "browser"
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}


class Looker:
    """Looks at the page at each width: a screenshot kept under var/test-artifacts/browser/
    (git-ignored), then the check that the page does not scroll sideways. The page is left
    at the last width, where the test goes on."""

    def __init__(self, folder: Path, widths: tuple[dict[str, int], ...]) -> None:
        self.folder = folder
        self.widths = widths
        self.count = 0
        self.seen: list[str] = []

    def __call__(self, page, name: str) -> None:
        self.count += 1
        self.seen.append(name)
        # A look straight after a click could measure a page whose style sheets are still on
        # their way.
        page.wait_for_load_state("load")
        problems = []
        for size in self.widths:
            page.set_viewport_size(size)
            overflow = page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            shot = self.folder / f"{self.count:02d}-{name}-{size['width']}.png"
            page.screenshot(path=str(shot), full_page=True)
            if overflow > 0:
                problems.append(f"{name} scrolls sideways by {overflow}px at {size['width']}px ({page.url})")
        assert problems == []


def _looker(request: pytest.FixtureRequest, widths: tuple[dict[str, int], ...]) -> Looker:
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return Looker(folder, widths)


@pytest.fixture
def look_phone_last(request: pytest.FixtureRequest) -> Looker:
    """Looks at desktop then phone width, and leaves the page at phone width."""
    return _looker(request, (DESKTOP, PHONE))


@pytest.fixture
def look_desktop_last(request: pytest.FixtureRequest) -> Looker:
    """Looks at phone then desktop width, and leaves the page at desktop width."""
    return _looker(request, (PHONE, DESKTOP))
