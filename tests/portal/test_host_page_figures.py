"""The host page's per-version figures in the units a volunteer reads: turnaround as a
duration, and the daily quota the scheduler applies, also before the row has one."""

from __future__ import annotations

import pytest
from lxml import html

from tests.factories import AppFactory, AppVersionFactory, HostAppVersionFactory, HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def version_row(client, hav) -> dict[str, str]:
    """Header -> text of the host page's row for ``hav``'s app version."""
    page = html.fromstring(client.get(f"/hp/show_host_detail.php?hostid={hav.host_id}").content)
    [table] = page.xpath("//h2[.='Application versions on this computer']/following-sibling::table[1]")
    headers = [th.text_content() for th in table.xpath(".//thead//th")]
    [row] = table.xpath(".//tbody/tr")
    return dict(zip(headers, (td.text_content() for td in row.xpath("td")), strict=True))


@pytest.fixture
def project():
    return ProjectFactory(slug="hp", daily_result_quota=200)


def hav_of(project, **fields):
    version = AppVersionFactory(app=AppFactory(project=project, **fields.pop("app", {})))
    return HostAppVersionFactory(host=HostFactory(account__project=project), app_version=version, **fields)


def test_turnaround_of_seconds_is_shown_in_seconds(client, project):
    hav = hav_of(project, turnaround_avg=33.61, turnaround_n=4)
    assert version_row(client, hav)["Turnaround"] == "33.6 s"


def test_turnaround_of_a_day_and_a_half_is_shown_in_days(client, project):
    hav = hav_of(project, turnaround_avg=1.5 * 86400, turnaround_n=4)
    assert version_row(client, hav)["Turnaround"] == "1.50 days"


def test_quota_not_yet_set_shows_the_projects_initial_quota(client, project):
    hav = hav_of(project, max_jobs_per_day=0)
    assert version_row(client, hav)["Max jobs/day"] == "200"


def test_quota_not_yet_set_shows_the_apps_initial_quota(client, project):
    hav = hav_of(project, max_jobs_per_day=0, app={"max_jobs_per_day_init": 40})
    assert version_row(client, hav)["Max jobs/day"] == "40"


def test_quota_lowered_by_errors_is_shown_as_stored(client, project):
    hav = hav_of(project, max_jobs_per_day=3)
    assert version_row(client, hav)["Max jobs/day"] == "3"


def test_no_quota_at_all_is_a_dash_that_says_why(client, project):
    project.daily_result_quota = 0
    project.save()
    hav = hav_of(project, max_jobs_per_day=0)
    assert version_row(client, hav)["Max jobs/day"] == "—"
    body = client.get(f"/hp/show_host_detail.php?hostid={hav.host_id}").content.decode()
    assert '<span title="The project sets no daily quota">—</span>' in body
