from datetime import date, timedelta

import pytest

from apps.volunteers.models import CreditHistory
from tests.factories import AccountFactory, ProjectFactory, TeamFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_volunteer_finds_their_credit_and_chart_from_the_top_list_on_a_phone(live_server, browser):
    team = TeamFactory(project=ProjectFactory(slug="phone", name="Phone Project"), name="Pocket")
    account = AccountFactory(
        project=team.project, team=team, name="Margaret", total_credit=4321.0, expavg_credit=12.5
    )
    for i in range(7):
        CreditHistory.objects.create(
            project=team.project,
            account=account,
            day=date(2026, 11, 14) + timedelta(days=i),
            total_credit=600.0 * i,
        )
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/phone/top_users.php")
        page.click("text=Margaret")
        assert page.locator("#total-credit").inner_text() == "4,321.00"
        chart = page.locator("svg.chart")
        assert chart.count() == 1
        assert chart.bounding_box()["width"] <= 390
    finally:
        context.close()
