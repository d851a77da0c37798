"""The admin: branded as the portal, labels in plain English, the project dashboards linked
from its index, the results list in the columns an admin scans."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from lxml import html

from apps.work.domain.states import Outcome, ServerState, ValidateState
from tests.factories import ProjectFactory, ResultFactory

pytestmark = pytest.mark.django_db


def test_the_admin_is_branded_as_the_portal(admin_client):
    body = admin_client.get("/admin/").content.decode()
    assert "Cobblestone administration" in body
    assert "Django administration" not in body


def test_the_index_links_each_projects_dashboard(admin_client):
    project = ProjectFactory(slug="dash", name="Dash Project")
    doc = html.fromstring(admin_client.get("/admin/").content)
    links = doc.xpath('//div[@id="project-dashboards"]//a/@href')
    assert f"/admin/projects/project/{project.pk}/dashboard/" in links


def test_the_index_lists_no_dashboard_to_staff_who_may_not_see_projects(client):
    ProjectFactory(slug="dash")
    user = get_user_model().objects.create_user("clerk", is_staff=True)
    client.force_login(user)
    assert 'id="project-dashboards"' not in client.get("/admin/").content.decode()


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("/admin/applications/", "Plan classes"),
        ("/admin/locality/", "Need-work signals"),
    ],
)
def test_model_names_are_spelt_right(admin_client, url, label):
    body = admin_client.get(url).content.decode()
    assert label in body
    assert "classs" not in body
    assert "Need works" not in body


def test_outcome_filter_writes_couldnt_with_its_apostrophe(admin_client):
    body = admin_client.get("/admin/work/result/").content.decode()
    assert "Couldn&#x27;t Send" in body
    assert "Couldnt" not in body


def test_the_results_list_shows_boincs_status_phrase(admin_client):
    ResultFactory(server_state=ServerState.OVER, outcome=Outcome.SUCCESS, validate_state=ValidateState.VALID)
    doc = html.fromstring(admin_client.get("/admin/work/result/").content)
    headers = [th.text_content().strip() for th in doc.xpath('//table[@id="result_list"]/thead//th')][1:]
    assert headers == ["Name", "Status", "App", "Host", "Sent", "Reported", "Granted credit"]
    assert doc.xpath('//td[@class="field-status"]')[0].text_content() == "Completed and validated"
