"""A volunteer in a browser: the sign-up form's statistics export box, and changing it later
under Project preferences."""

from __future__ import annotations

import pytest

from apps.volunteers.models import Account
from tests.factories import ProjectFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CONSENT = "Do you consent to exporting your data to BOINC statistics aggregation web sites?"


def test_signup_without_export_consent_then_consent_in_prefs(live_server, page):
    from playwright.sync_api import expect

    ProjectFactory(slug="priv", name="Privacy Project")
    page.goto(f"{live_server.url}/priv/signup/")
    consent = page.get_by_label(CONSENT)
    expect(consent).to_be_checked()
    page.fill("#id_name", "Grace")
    page.fill("#id_email", "grace@example.org")
    page.fill("#id_password", "longpassword")
    consent.uncheck()
    page.click("text=Create account")
    expect(page.locator("#account-key")).to_be_visible()
    assert Account.objects.get(email_addr="grace@example.org").stats_export_consent is False

    page.click("text=Project preferences")
    expect(page.get_by_label(CONSENT)).not_to_be_checked()
    expect(page.get_by_label("Show your computers on this project's web site?")).to_be_checked()
    page.get_by_label(CONSENT).check()
    page.click("text=Save")
    expect(page.locator("#prefs-saved")).to_contain_text("Your preferences are saved")
    expect(page.get_by_label(CONSENT)).to_be_checked()
    assert Account.objects.get(email_addr="grace@example.org").stats_export_consent is True
