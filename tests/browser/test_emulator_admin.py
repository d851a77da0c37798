"""An admin opens a stored scenario, runs it against the project's apps and sees the chart."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from apps.emulator.domain import bundled_scenarios
from apps.emulator.models import Scenario
from tests.browser.conftest import admin_login
from tests.factories import AppFactory, AppVersionFactory, ProjectFactory, WorkunitFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_runs_a_scenario_and_sees_the_chart(live_server, page, look_desktop_last):
    get_user_model().objects.create_superuser("boss", "boss@example.com", "s3cret-pass")
    project = ProjectFactory(slug="B", name="Project B")
    app = AppFactory(project=project, name="search")
    AppVersionFactory(app=app, plan_class="")
    AppVersionFactory(app=app, plan_class="cuda", version_num=101)
    WorkunitFactory(app=app, rsc_fpops_est=7.2e12)
    text = bundled_scenarios()["example1_gpu_sharing"].read_text()
    scenario = Scenario.objects.create(name="Example 1: GPU sharing", project=project, text=text)

    admin_login(page, live_server.url, "boss", "s3cret-pass")
    page.goto(f"{live_server.url}/admin/emulator/scenario/{scenario.pk}/change/")
    page.click("text=Run emulation")
    page.select_option("#id_policy", "all")
    page.fill("#id_days", "3")
    page.click("input[name=_run]")

    charts = page.locator(".emulation-chart svg")
    expect(charts).to_have_count(3)
    assert charts.first.is_visible()
    assert charts.first.bounding_box()["height"] > 100
    assert page.locator("#emulation-comparison tbody tr").count() == 3
    gpu_bands = page.locator('.emulation-chart[data-policy="v6-gpu"] svg polygon')
    assert gpu_bands.count() >= 2  # A on the GPU; B on the CPU and the GPU
    look_desktop_last(page, "emulation")  # the timelines scroll in place on a phone, not the page
