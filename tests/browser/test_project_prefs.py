"""The project preferences page in a browser at 1366 and 390 px: a volunteer sets a resource
share, chooses an application, gives the home location its own share, and removes it."""

from __future__ import annotations

import pytest

from apps.scheduler.services.prefs import account_project_prefs_get
from apps.volunteers.models import Account
from tests.factories import AccountFactory, AppFactory, ProjectFactory
from tests.portal.volunteer_helpers import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_volunteer_sets_share_apps_and_a_location(live_server, page, look_phone_last):
    from playwright.sync_api import expect

    project = ProjectFactory(slug="share", name="Share Project")
    AppFactory(project=project, name="alpha", user_friendly_name="Alpha search")
    beta = AppFactory(
        project=project,
        name="beta",
        user_friendly_name="Beta search",
        prefs_fields="color_scheme: Colour scheme of the graphics",
    )
    ada = AccountFactory(project=project, email_addr="ada@example.org", password=PASSWORD)
    page.goto(f"{live_server.url}/share/account/")
    page.fill("input[name=email]", ada.email_addr)
    page.fill("input[name=password]", PASSWORD)
    page.locator("form button[type=submit], form input[type=submit]").first.click()
    page.goto(f"{live_server.url}/share/prefs.php?subset=project")
    expect(page.get_by_label("Resource share")).to_have_value("100")
    look_phone_last(page, "project-prefs")

    page.get_by_label("Resource share").fill("250")
    page.get_by_label("Beta search").check()
    page.get_by_label("If no work for selected applications is available", exact=False).check()
    page.get_by_label("Colour scheme of the graphics").fill("Tahiti Sunset")
    page.click("text=Save")
    expect(page.locator("#prefs-saved")).to_contain_text("Your preferences are saved")
    expect(page.get_by_label("Resource share")).to_have_value("250")
    primary = account_project_prefs_get(Account.objects.get(pk=ada.pk)).primary
    assert (primary.resource_share, primary.apps_selected, primary.allow_non_preferred_apps) == (
        250,
        (beta.id,),
        True,
    )

    page.click("#venue-home")
    expect(page.get_by_label("Resource share")).to_have_value("250")
    look_phone_last(page, "project-prefs-home")
    page.get_by_label("Resource share").fill("40")
    page.click("text=Save")
    expect(page.locator("#prefs-saved")).to_be_visible()
    look_phone_last(page, "project-prefs-home-saved")
    assert account_project_prefs_get(Account.objects.get(pk=ada.pk)).for_venue("home").resource_share == 40

    page.click("#remove-venue")
    expect(page.locator("#prefs-saved")).to_contain_text("computers there use the primary ones")
    assert account_project_prefs_get(Account.objects.get(pk=ada.pk)).venue("home") is None


def test_a_refused_resource_share_shows_its_error(live_server, page, look_phone_last):
    from playwright.sync_api import expect

    project = ProjectFactory(slug="bad", name="Bad Share")
    ada = AccountFactory(project=project, email_addr="ada@example.org", password=PASSWORD)
    page.goto(f"{live_server.url}/bad/account/")
    page.fill("input[name=email]", ada.email_addr)
    page.fill("input[name=password]", PASSWORD)
    page.locator("form button[type=submit], form input[type=submit]").first.click()
    page.goto(f"{live_server.url}/bad/account/prefs/")
    page.get_by_label("Resource share").fill("-5")
    page.click("text=Save")
    expect(page.locator(".errorlist")).to_contain_text("greater than or equal to 0")
    look_phone_last(page, "project-prefs-error")
    assert Account.objects.get(pk=ada.pk).project_prefs == ""
