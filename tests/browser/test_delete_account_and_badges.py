"""Deleting an account in a browser, and badges on the user and team pages: every page is
looked at 1366 and 390 pixels wide (no sideways scroll; screenshots in var/test-artifacts/)."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import override_settings
from playwright.sync_api import expect

from apps.core import clock
from apps.volunteers.models import Account
from apps.volunteers.services.badges import badges_assign
from tests.factories import AccountFactory, ProjectFactory, TeamFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long secret"


@pytest.fixture
def ada(live_server):
    project = ProjectFactory(slug="gone", name="Gone Project", base_url=live_server.url)
    team = TeamFactory(project=project, name="Badgers", total_credit=2e6, expavg_credit=300.0)
    account = AccountFactory(
        project=project,
        name="Ada",
        email_addr="ada@example.org",
        password=PASSWORD,
        team=team,
        total_credit=25_000.0,
        expavg_credit=120.0,
    )
    badges_assign(project=project, now=clock.now())
    return account


def log_in(page, base: str) -> None:
    page.goto(f"{base}/account/")
    page.fill("#id_email", "ada@example.org")
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Log in')")


def test_badges_on_the_user_and_team_pages(live_server, ada, page, look_phone_last):
    base = f"{live_server.url}/gone"
    page.goto(f"{base}/show_user.php?userid={ada.pk}")
    look_phone_last(page, "user-badges")
    expect(page.locator("#badges")).to_contain_text("10,000 credits")
    page.goto(f"{base}/team_display.php?teamid={ada.team_id}")
    look_phone_last(page, "team-badges")
    expect(page.locator("#badges")).to_contain_text("1,000,000 credits")


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=7)
def test_volunteer_asks_confirms_and_then_keeps_their_account(live_server, ada, page, look_phone_last):
    look = look_phone_last
    base = f"{live_server.url}/gone"
    log_in(page, base)
    page.click("#delete-account")
    look(page, "delete-request")
    page.fill("#id_password", "wrong password")
    page.click("#delete-request")
    expect(page.locator("form")).to_contain_text("Wrong password.")
    look(page, "delete-wrong-password")
    page.fill("#id_password", PASSWORD)
    page.click("#delete-request")
    expect(page.locator("#delete-sent")).to_be_visible()
    look(page, "delete-sent")
    url = re.search(r"http\S+delete_account_confirm\.php\?token=\S+", mail.outbox[-1].body).group(0)
    page.goto(url)
    look(page, "delete-confirm")
    page.click("#delete-confirm")
    expect(page.locator("#delete-scheduled")).to_be_visible()
    look(page, "delete-scheduled")
    page.goto(url)  # the link again: the page tells the deletion is set already
    expect(page.locator("#delete-scheduled")).to_be_visible()
    expect(page.locator("#delete-confirm")).to_have_count(0)
    page.goto(f"{base}/account/")
    expect(page.locator("#account-delete-due")).to_be_visible()
    page.goto(f"{base}/delete_account_request.php")
    page.click("#delete-cancel")
    expect(page.locator(".messages")).to_contain_text("Your account will not be deleted.")
    assert Account.objects.get(pk=ada.pk).delete_after is None


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=0)
def test_volunteer_deletes_their_account_at_once(live_server, ada, page, look_phone_last):
    base = f"{live_server.url}/gone"
    log_in(page, base)
    page.goto(f"{base}/delete_account_request.php")
    page.fill("#id_password", PASSWORD)
    page.click("#delete-request")
    page.goto(re.search(r"http\S+token=\S+", mail.outbox[-1].body).group(0))
    page.click("#delete-confirm")
    expect(page.locator("#account-deleted")).to_be_visible()
    look_phone_last(page, "deleted")
    page.goto(f"{base}/top_users.php")
    expect(page.locator("main")).not_to_contain_text("Ada")
