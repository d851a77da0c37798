import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from apps.applications.models import AppVersion
from apps.projects.services import project_create
from tests.browser.conftest import admin_login
from tests.factories import AppFactory, PlatformFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_logs_in_creates_an_app_version_and_sees_it_listed(
    live_server, page, tmp_path, look_phone_last
):
    look = look_phone_last
    get_user_model().objects.create_superuser("boss", "boss@example.com", "s3cret-pass")
    project = project_create(slug="fold", name="Folding").project  # a code-signing key
    app = AppFactory(project=project, name="folding", user_friendly_name="Protein folding")
    platform = PlatformFactory(name="x86_64-pc-linux-gnu")
    program = tmp_path / "fold_worker"
    program.write_bytes(b"#!/bin/sh\n")

    admin_login(page, live_server.url, "boss", "s3cret-pass")
    page.goto(f"{live_server.url}/admin/applications/appversion/add/")
    look(page, "app-version-add")  # filled in at phone width, where the looker leaves it
    page.select_option("#id_app", str(app.pk))
    page.select_option("#id_platform", str(platform.pk))
    page.fill("#id_version_num", "712")
    page.fill("#id_plan_class", "cuda")
    page.set_input_files("#id_main_program", str(program))
    page.click("input[name=_save]")

    expect(page.locator("ul.messagelist li.success")).to_have_count(1)
    row = page.locator("#result_list tbody tr", has_text="7.12")
    expect(row).to_have_count(1)
    look(page, "app-versions")
    assert "cuda" in row.inner_text()
    assert AppVersion.objects.get().version_num == 712
