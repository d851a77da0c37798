"""The production 404 page in a browser: Django's own handler with DEBUG off renders the site's
404.html, styled, at 1366 and 390 pixels wide, however long the mistyped address."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# A long address without spaces, as pasted from a mail: the page repeats it.
MISTYPED = "/climateprediction_experiment_2026/results_of_the_long_running_simulation_batch_0042.php"


def test_an_unknown_address_shows_the_sites_404_page_at_both_widths(
    live_server, page, settings, look_phone_last
):
    # pytest-django turns DEBUG off while tests run (the environment's DEBUG=true only shapes
    # the settings module); set here too, since with DEBUG on Django shows its own page instead.
    settings.DEBUG = False
    response = page.goto(f"{live_server.url}{MISTYPED}")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Page not found")
    expect(page.locator("main code").first).to_have_text(MISTYPED)
    styled = page.evaluate("() => [...document.styleSheets].some(s => s.cssRules.length > 0)")
    assert styled is True
    look_phone_last(page, "404")
    page.click("main >> text=home page")
    expect(page).to_have_url(f"{live_server.url}/")
