"""What server_status.php's HTML says: runtimes of short tasks as durations (the XML keeps
BOINC's hours), and "Not yet run" for a daemon that has no recorded run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from lxml import etree, html

from apps.core import clock
from apps.projects.models import DaemonRun
from apps.work.domain.states import Outcome, ServerState
from tests.factories import AppFactory, ProjectFactory, ResultFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return ProjectFactory(slug="st")


def finished(app, elapsed: float) -> None:
    ResultFactory(
        workunit__app=app,
        server_state=ServerState.OVER,
        outcome=Outcome.SUCCESS,
        received_time=clock.now() - timedelta(hours=1),
        elapsed_time=elapsed,
    )


def runtime_cell(client, name: str) -> str:
    page = html.fromstring(client.get("/st/server_status.php").content)
    [row] = page.xpath(f"//h2[.='Tasks by application']/following-sibling::table[1]//tr[td[1]='{name}']")
    return row.xpath("td")[3].text_content()


def daemon_status(client, command: str) -> str:
    page = html.fromstring(client.get("/st/server_status.php").content)
    [row] = page.xpath(f"//h2[.='Server status']/following-sibling::table[1]//tr[td[1]='{command}']")
    return row.xpath("td")[2].text_content()


def test_short_runtimes_are_shown_in_seconds(client, project):
    app = AppFactory(project=project, name="quick", user_friendly_name="Quick")
    finished(app, 1.1)
    finished(app, 1.5)
    assert runtime_cell(client, "Quick") == "1.3 s (1.1 s – 1.5 s)"


def test_long_runtimes_are_shown_in_hours(client, project):
    app = AppFactory(project=project, name="slow", user_friendly_name="Slow")
    finished(app, 2 * 3600)
    assert runtime_cell(client, "Slow") == "2.00 h (2.00 h – 2.00 h)"


def test_an_app_without_tasks_in_the_last_day_has_dashes(client, project):
    AppFactory(project=project, name="idle", user_friendly_name="Idle")
    assert runtime_cell(client, "Idle") == "---"


def test_xml_runtimes_stay_in_hours_as_boincs(client, project):
    finished(AppFactory(project=project, name="slow"), 2 * 3600)
    root = etree.fromstring(client.get("/st/server_status.php?xml=1").content)
    [app] = root.find("database_file_states").find("tasks_by_app")
    assert float(app.findtext("avg_runtime")) == 2.0


def test_daemon_with_no_recorded_run_has_not_yet_run(client, project):
    assert daemon_status(client, "db_dump") == "Not yet run"


def test_daemon_whose_last_run_is_old_is_not_running(client, project):
    DaemonRun.objects.create(project=project, daemon="db_dump", started=clock.now() - timedelta(days=5))
    assert daemon_status(client, "db_dump") == "Not running"


def test_daemon_that_ran_recently_is_running(client, project):
    DaemonRun.objects.create(project=project, daemon="db_dump", started=clock.now())
    assert daemon_status(client, "db_dump") == "Running"


def test_xml_keeps_boincs_not_running_for_a_daemon_with_no_run(client, project):
    root = etree.fromstring(client.get("/st/server_status.php?xml=1").content)
    states = {d.findtext("command"): d.findtext("status") for d in root.find("daemon_status")}
    assert states["db_dump"] == "not running"
