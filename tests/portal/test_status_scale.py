"""server_status.php and the admin dashboard at a real project's size: a fixed number of
indexed queries however many apps and daemon runs, and the public page computed at most
once a minute."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from lxml import etree

from apps.core import clock
from apps.projects.models import DaemonRun
from apps.work.domain.states import ServerState
from tests.factories import AppFactory, ProjectFactory, ResultFactory

pytestmark = pytest.mark.django_db


def captured(client, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in queries.captured_queries]


def add_apps(project, n: int) -> None:
    for _ in range(n):
        ResultFactory(workunit__app=AppFactory(project=project))


def test_status_page_takes_the_same_queries_for_1_or_4_apps(client):
    one, four = ProjectFactory(slug="one"), ProjectFactory(slug="four")
    add_apps(one, 1)
    add_apps(four, 4)
    assert len(captured(client, "/four/server_status.php")) == len(captured(client, "/one/server_status.php"))


def test_dashboard_takes_the_same_queries_for_1_or_4_apps(admin_client):
    one, four = ProjectFactory(slug="one"), ProjectFactory(slug="four")
    add_apps(one, 1)
    add_apps(four, 4)
    admin_client.get(f"/admin/projects/project/{one.pk}/dashboard/")  # fills per-process caches
    few = captured(admin_client, f"/admin/projects/project/{one.pk}/dashboard/")
    assert len(captured(admin_client, f"/admin/projects/project/{four.pk}/dashboard/")) == len(few)


def test_status_page_counts_again_at_most_once_a_minute(client):
    project = ProjectFactory(slug="busy")
    ResultFactory(workunit__project=project, workunit__app__project=project)
    first = client.get("/busy/server_status.php?xml=1").content
    ResultFactory(workunit__project=project, workunit__app__project=project)
    again = captured(client, "/busy/server_status.php?xml=1")
    assert not any('"work_result"' in sql for sql in again)
    assert client.get("/busy/server_status.php?xml=1").content == first


def test_status_page_counts_each_project_for_itself(client):
    ResultFactory(workunit__app__project=ProjectFactory(slug="first"), workunit__project__slug="first")
    client.get("/first/server_status.php")
    other = ProjectFactory(slug="second")
    body = client.get("/second/server_status.php").content.decode()
    assert other.name in body
    assert '<td id="results-ready-to-send">0</td>' in body


def test_status_counts_unsent_and_in_progress_results_per_app(client):
    project = ProjectFactory(slug="per-app")
    alpha, beta = AppFactory(project=project, name="alpha"), AppFactory(project=project, name="beta")
    ResultFactory.create_batch(2, workunit__app=alpha, server_state=ServerState.UNSENT)
    ResultFactory(workunit__app=beta, server_state=ServerState.IN_PROGRESS)
    root = etree.fromstring(client.get("/per-app/server_status.php?xml=1").content)
    apps = {
        a.findtext("name"): (a.findtext("unsent"), a.findtext("in_progress"))
        for a in root.find("database_file_states").find("tasks_by_app")
    }
    assert apps == {"alpha": ("2", "0"), "beta": ("0", "1")}


def test_daemon_runs_portal_wide_count_when_later_than_the_projects(admin_client):
    project = ProjectFactory(slug="daemons")
    now = clock.now()
    DaemonRun.objects.create(project=project, daemon="feeder", started=now - timedelta(days=2))
    DaemonRun.objects.create(project=None, daemon="feeder", started=now - timedelta(minutes=1), items=7)
    status = admin_client.get(f"/admin/projects/project/{project.pk}/dashboard/").context["status"]
    [feeder] = [d for d in status.daemons if d.name == "feeder"]
    assert (feeder.state, feeder.items) == ("running", 7)
