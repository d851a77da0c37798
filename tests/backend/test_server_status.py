"""The public server_status.php page (HTML and BOINC's XML) and pausing daemons in the admin."""

from __future__ import annotations

import pytest
from lxml import etree

from apps.core import clock
from apps.projects.models import DaemonRun, Project
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.backend.conftest import make_wu, send

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy(project, app, version, hosts):
    now = clock.now()
    wu = make_wu(project, app, now)
    send(wu.results.first(), hosts[0], version, now)
    make_wu(project, app, now, name="wu2")
    DaemonRun.objects.create(project=project, daemon="transitioner", started=now, items=3)
    project.paused_daemons = ["db_purge"]
    project.save()
    return project


def test_xml_export_uses_boincs_element_names(client, busy):
    response = client.get(f"/{busy.slug}/server_status.php?xml=1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/xml")
    root = etree.fromstring(response.content)
    assert root.tag == "server_status"
    states = root.find("database_file_states")
    assert states.findtext("results_ready_to_send") == "3"
    assert states.findtext("results_in_progress") == "1"
    assert states.findtext("workunits_waiting_for_validation") == "0"
    for tag in (
        "workunits_waiting_for_assimilation",
        "workunits_waiting_for_deletion",
        "results_waiting_for_deletion",
        "transitioner_backlog_hours",
        "users_with_recent_credit",
        "users_with_credit",
        "users_registered_in_past_24_hours",
        "hosts_with_recent_credit",
        "hosts_with_credit",
        "hosts_registered_in_past_24_hours",
        "current_floating_point_speed",
    ):
        assert states.find(tag) is not None, tag
    [app] = states.find("tasks_by_app").findall("app")
    assert (app.findtext("name"), app.findtext("unsent"), app.findtext("in_progress")) == ("sim", "3", "1")
    daemons = {d.findtext("command"): d.findtext("status") for d in root.find("daemon_status")}
    assert daemons["Scheduler"] == "running"
    assert daemons["transitioner"] == "running"
    assert daemons["db_purge"] == "disabled"
    assert daemons["validator"] == "not running"


def test_html_page_shows_the_counts_and_daemons(client, busy):
    response = client.get(f"/{busy.slug}/server_status.php")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<td id="results-ready-to-send">3</td>' in html
    assert '<td id="results-in-progress">1</td>' in html
    assert "transitioner" in html
    assert "Disabled" in html


def test_unknown_project_is_404(client, db):
    assert client.get("/nosuch/server_status.php").status_code == 404


def test_admin_actions_pause_and_resume_every_daemon(admin_client, project):
    url = "/admin/projects/project/"
    admin_client.post(url, {"action": "pause_daemons", "_selected_action": [project.pk]})
    project.refresh_from_db()
    assert "transitioner" in project.paused_daemons
    assert project.is_daemon_paused("credit_normalize") is False
    assert project.is_daemon_paused("feeder") is True
    admin_client.post(url, {"action": "resume_daemons", "_selected_action": [project.pk]})
    project.refresh_from_db()
    assert project.paused_daemons == []


def test_admin_form_offers_each_periodic_task_as_a_checkbox(admin_client, project):
    response = admin_client.get(f"/admin/projects/project/{project.pk}/change/")
    assert response.status_code == 200
    assert 'name="paused_daemons" value="validator"' in response.content.decode()


def test_paused_transitioner_leaves_the_project_alone(project, app):
    from apps.work.tasks import transition_task

    Project.objects.filter(id=project.id).update(paused_daemons=["transitioner"])
    wu = make_wu(project, app, clock.now(), create_results=False)
    transition_task()
    assert not Result.objects.filter(workunit=wu).exists()
    assert Result.objects.filter(server_state=ServerState.UNSENT).count() == 0
