"""A scientist logged in to the project follows a batch's progress and aborts it (submit.php)."""

from __future__ import annotations

import pytest

from apps.applications.services import app_create
from apps.projects.services import project_create
from apps.submit.models import UserSubmit
from tests.factories import AccountFactory
from tests.submit.batches import submitted

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "a long secret"


def test_a_scientist_sees_progress_and_aborts_a_batch(live_server, page, look_desktop_last):
    from playwright.sync_api import expect

    project = project_create(slug="lab", name="Lab Project").project
    app = app_create(project=project, name="fold", user_friendly_name="Folding")
    scientist = AccountFactory(
        project=project, name="Rosalind", email_addr="rf@example.org", password=PASSWORD
    )
    UserSubmit.objects.create(account=scientist, quota=1, submit_all=True)
    batch = submitted(project, app, scientist, "helix scan", njobs=3)

    page.goto(f"{live_server.url}/lab/account/")
    page.fill("#id_email", "rf@example.org")
    page.fill("#id_password", PASSWORD)
    page.click("button:has-text('Log in')")
    page.click("#account-batches")
    row = page.locator(f"#batch-{batch.id}")
    expect(row.locator(".percent")).to_have_text("0 %")
    expect(row.locator(".state")).to_have_text("In Progress")
    look_desktop_last(page, "batches")

    row.locator("a", has_text="helix scan").click()
    expect(page.locator("#jobs tbody tr")).to_have_count(3)
    look_desktop_last(page, "batch")
    page.click("#abort-batch")
    page.click("#confirm-action")
    expect(page.locator(".messages")).to_contain_text("Batch helix scan is aborted.")
    expect(page.locator("#batch-state")).to_have_text("Aborted")
    expect(page.locator("#abort-batch")).to_have_count(0)
