"""An admin's rounds in a browser, at 1366 and 390 pixels wide: the portal's name on every
page, the project dashboards from the index, the results list readable beside its filters,
the models' names spelt right, the work sequences' title clear of the Add button, the credit
chart's labels at the page's size. No page scrolls
sideways; a screenshot of each is kept (var/test-artifacts/browser/)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from apps.applications.models import PlanClass
from apps.locality.models import LocalityFile, NeedWork
from apps.projects.services import project_create
from apps.sequences.services import SequenceSpec, sequence_create
from apps.work.domain.states import Outcome, ServerState, ValidateState
from apps.work.services import JobSpec, OutputSpec
from tests.browser.conftest import DESKTOP, PHONE, admin_login
from tests.factories import (
    AccountFactory,
    AppFactory,
    AppVersionFactory,
    HostFactory,
    ResultFactory,
    WorkunitFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def text_lines(page, selector: str) -> list[dict[str, float]]:
    """The boxes of the lines of text of the elements ``selector`` finds (a heading's own box
    spans the whole width, beside the buttons too)."""
    return page.evaluate(
        """s => [...document.querySelectorAll(s)].flatMap(e => {
            const r = document.createRange(); r.selectNodeContents(e);
            return [...r.getClientRects()].map(b => ({x: b.x, y: b.y, width: b.width, height: b.height}));
        })""",
        selector,
    )


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


@pytest.fixture
def project(db):
    project = project_create(slug="ops", name="Operations Project").project
    app = AppFactory(project=project, name="sim", user_friendly_name="Simulation")
    version = AppVersionFactory(app=app)
    # Names fixed here: the factories' defaults end in counters over the whole test session,
    # so the columns' widths would depend on the tests that ran before.
    # The host's id too: a large project's hosts have eight-digit ids.
    host = HostFactory(pk=12_345_678, account=AccountFactory(project=project), domain_name="host0")
    for i in range(3):
        wu = WorkunitFactory(app=app, name=f"a_rather_long_workunit_name_of_a_batch_{i:04d}")
        ResultFactory(
            workunit=wu,
            name=f"{wu.name}_0",
            host=host,
            app_version=version,
            server_state=ServerState.OVER,
            outcome=Outcome.SUCCESS,
            validate_state=ValidateState.VALID,
            granted_credit=12.5 + i,
            sent_time="2026-11-20T10:00Z",
            received_time="2026-11-21T12:30Z",
        )
    PlanClass.objects.create(project=project, name="cuda_big")
    # The climate example of docs/sequences.md: 60 steps of 3 days, the state uploaded every 7th.
    sequence_create(
        project=project,
        app=app,
        spec=SequenceSpec(
            name="climate_run_042",
            job=JobSpec(
                outputs=(OutputSpec(open_name="state", max_nbytes=10_000_000, sequence_state=True),),
                rsc_fpops_est=2.6e14,
                rsc_fpops_bound=2.6e15,
            ),
            max_result_time=4 * 86400,
            length=60,
            restartable_every=7,
        ),
        now=timezone.now(),
    )
    NeedWork.objects.create(
        file=LocalityFile.objects.create(project=project, name="h1_0100"), requested_time="2026-11-20T00:00Z"
    )
    return project


def test_admin_rounds(live_server, page, project, look_desktop_last):
    look = look_desktop_last
    get_user_model().objects.create_superuser("boss", "boss@example.com", "s3cret-pass")
    base = f"{live_server.url}/admin"
    page.goto(f"{base}/login/")
    look(page, "login")
    expect(page.locator("#site-name")).to_have_text("Cobblestone administration")
    admin_login(page, live_server.url, "boss", "s3cret-pass")
    assert "Django" not in page.title()
    look(page, "index")

    # The project dashboard, straight from the index.
    page.click("#project-dashboards a:has-text('Operations Project')")
    expect(page.locator("#results-in-progress")).to_be_visible()
    look(page, "dashboard")

    # The results list: every column within the screen beside the filters, BOINC's status words.
    page.goto(f"{base}/work/result/")
    expect(page.locator("#result_list thead th").last).to_contain_text("Granted credit")
    hidden = page.evaluate(
        "() => { const r = document.querySelector('#changelist .results'); return r.scrollWidth - r.clientWidth; }"
    )
    assert hidden <= 0, f"the results list hides {hidden}px of columns at 1366px"
    expect(page.locator("#result_list td.field-status").first).to_have_text("Completed and validated")
    look(page, "results")
    page.locator("#result_list th.field-name a").first.click()
    look(page, "result")

    # Names spelt right.
    page.goto(f"{base}/applications/")
    expect(page.locator("#content-main")).to_contain_text("Plan classes")
    look(page, "applications")
    page.goto(f"{base}/applications/planclass/")
    look(page, "plan-classes")
    page.goto(f"{base}/locality/needwork/")
    expect(page.locator("#content h1")).to_contain_text("need-work signal")
    look(page, "need-work")
    page.goto(f"{base}/work/result/?outcome__exact=2")
    expect(page.locator("#changelist-filter")).to_contain_text("Couldn't Send")
    page.goto(f"{base}/volunteers/account/")
    look(page, "accounts")

    # The work sequences: the page's title, subtitle and note beside its buttons, never under
    # them (a long subtitle once ran under the Add button).
    page.goto(f"{base}/sequences/worksequence/")
    expect(page.locator("#result_list")).to_contain_text("climate_run_042")
    look(page, "work-sequences")
    for size in (PHONE, DESKTOP):
        page.set_viewport_size(size)
        tools = page.locator("ul.object-tools a")
        expect(tools.first).to_be_visible()
        lines = text_lines(page, "#content > h1, #content > h2, #content-main > p.help")
        assert len(lines) >= 2
        for tool in tools.all():
            box = tool.bounding_box()
            for line in lines:
                assert not overlap(line, box), f"text covers {tool.inner_text()!r} at {size['width']}px"
    page.goto(f"{base}/volunteers/team/")
    look(page, "teams")

    # The credit chart's labels keep the page's font size on a phone.
    app = project.apps.get()
    page.goto(f"{base}/credit/planclassscale/app/{app.pk}/")
    look(page, "app-credit")
    page.set_viewport_size(PHONE)
    labels = page.locator("figure.cb-chart .cb-axis span")
    expect(labels).to_have_text(["1 jobs", "12.50", "14.50"])
    assert (
        min(label.evaluate("e => parseFloat(getComputedStyle(e).fontSize)") for label in labels.all()) >= 12
    )
