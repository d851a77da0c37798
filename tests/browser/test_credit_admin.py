import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from apps.applications.models import AppVersion
from tests.browser.conftest import admin_login
from tests.factories import AppFactory, AppVersionFactory, PlatformFactory, ProjectFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_opens_an_apps_credit_view_and_sees_the_version_scales(live_server, page):
    get_user_model().objects.create_superuser("boss", "boss@example.com", "s3cret-pass")
    linux = PlatformFactory(name="x86_64-pc-linux-gnu")
    mixed = AppFactory(project=ProjectFactory(slug="mixed"), name="sim", user_friendly_name="Simulation")
    AppVersionFactory(
        app=mixed, platform=linux, version_num=100, pfc_n=150, pfc_avg=0.8, pfc_scale=1.0, expavg_credit=100.0
    )
    AppVersionFactory(
        app=mixed,
        platform=linux,
        version_num=100,
        plan_class="cuda",
        proc_type="NVIDIA",
        pfc_n=300,
        pfc_avg=8.0,
        pfc_scale=0.1,
        expavg_credit=500.0,
    )
    gpu_only = AppFactory(project=ProjectFactory(slug="gpu"), name="gpuapp", user_friendly_name="GPU app")
    AppVersionFactory(app=gpu_only, platform=linux, version_num=200, plan_class="cuda", proc_type="NVIDIA")

    admin_login(page, live_server.url, "boss", "s3cret-pass")
    page.goto(f"{live_server.url}/admin/applications/app/{mixed.pk}/change/")
    page.click("a.credit-link")

    rows = page.locator("#version-scales tbody tr")
    expect(rows).to_have_count(2)
    cuda = page.locator("#version-scales tbody tr", has_text="cuda")
    assert "0.1" in cuda.locator("td.pfc-scale").inner_text()
    assert "300" in cuda.inner_text()
    assert page.locator("#hosts-on-probation").inner_text().startswith("0 of 0")

    # "Recompute now" on the GPU-only app gives its version the cuda factor of "mixed".
    page.goto(f"{live_server.url}/admin/credit/planclassscale/app/{gpu_only.pk}/")
    assert page.locator("#version-scales td.pfc-scale").inner_text() == "not set"
    page.click("#recompute-now")
    expect(page.locator("ul.messagelist li.success")).to_have_count(1)
    assert page.locator("#version-scales td.pfc-scale").inner_text() == "0.1"
    assert AppVersion.objects.get(app=gpu_only).pfc_scale == pytest.approx(0.1)
