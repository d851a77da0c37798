"""While the database is unreachable, clients get BOINC's "project is down" answers, never a 500."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.test import Client

from apps.protocol import (
    UploadStatus,
    WebRpcError,
    parse_account_reply,
    parse_project_config,
    parse_reply,
    render_request,
)
from apps.scheduler.services.catalog import project_by_slug
from tests.clients.conftest import post_upload, upload_body
from tests.outage import database_unreachable
from tests.scheduler.conftest import make_request

pytestmark = pytest.mark.django_db(transaction=True)

DATA = b"output bytes\n"


@pytest.fixture
def maintenance_delay(settings):
    settings.COBBLESTONE_MAINTENANCE_DELAY = 1234
    return 1234


def post_scheduler(client: Client, slug: str) -> HttpResponse:
    body = render_request(make_request("0" * 32))
    return client.post(f"/{slug}/cgi", data=body, content_type="application/x-www-form-urlencoded")


def test_scheduler_answers_project_down_with_a_delay(client, project, maintenance_delay):
    with database_unreachable():
        response = post_scheduler(client, project.slug)
    assert response.status_code == 200  # the client reads the body of a 200 only
    reply = parse_reply(response.content)
    assert reply.project_is_down is True
    assert reply.request_delay == maintenance_delay
    assert "down for maintenance" in reply.messages[0].text
    assert response["Retry-After"] == "1234"


def test_scheduler_with_the_project_cached_still_answers_project_down(client, project, maintenance_delay):
    assert project_by_slug(project.slug) is not None  # the catalog knows it: no lookup to fail
    with database_unreachable():
        response = post_scheduler(client, project.slug)
    reply = parse_reply(response.content)
    assert (response.status_code, reply.project_is_down, reply.request_delay) == (200, True, 1234)


def test_scheduler_recovers_when_the_database_is_back(client, project):
    with database_unreachable():
        post_scheduler(client, project.slug)
    reply = parse_reply(post_scheduler(client, project.slug).content)
    assert reply.project_is_down is False
    assert "account key" in reply.messages[0].text  # the usual answer to an unknown key


def test_json_scheduler_answers_503_with_the_delay(client, project, maintenance_delay):
    with database_unreachable():
        response = client.post(
            f"/api/v1/projects/{project.slug}/scheduler/", data={"hostid": 0}, content_type="application/json"
        )
    assert response.status_code == 503
    assert response["Retry-After"] == "1234"
    assert json.loads(response.content) == {
        "error": "Project is down for maintenance; please try again later.",
        "project_is_down": True,
        "request_delay": 1234,
    }


@pytest.mark.parametrize(
    "page",
    [
        "lookup_account.php?email_addr=a%40b.org&passwd_hash=" + "0" * 32,
        "create_account.php?email_addr=a%40b.org&passwd_hash=" + "0" * 32 + "&user_name=A",
        "am_get_info.php?account_key=" + "0" * 32,
    ],
)
def test_account_rpcs_answer_error_183(client, project, page):
    with database_unreachable():
        response = client.get(f"/{project.slug}/{page}")
    assert response.status_code == 200
    assert parse_account_reply(response.content).error_num == WebRpcError.PROJECT_DOWN


def test_project_config_carries_error_183(client, project):
    with database_unreachable():
        response = client.get(f"/{project.slug}/get_project_config.php")
    config = parse_project_config(response.content)
    assert (response.status_code, config.error_num, config.web_stopped) == (200, -183, True)


def test_upload_is_a_transient_error_the_client_retries(client, project, output):
    body = upload_body(output, DATA)
    with database_unreachable():
        posted = post_upload(client, project, body)
    assert (posted.http_status, posted.reply.status) == (200, UploadStatus.TRANSIENT)
    assert not (project.upload_dir / output.name).exists()


def test_download_is_a_503_to_retry(client, project):
    (project.download_dir).mkdir(parents=True, exist_ok=True)
    (project.download_dir / "in.txt").write_bytes(b"input")
    with database_unreachable():
        response = client.get(f"/{project.slug}/download/in.txt")
    assert response.status_code == 503
    assert response["Retry-After"]


@pytest.mark.parametrize(
    "path", ["/", "/{slug}/", "/{slug}/account/", "/{slug}/top_users.php", "/{slug}/server_status.php"]
)
def test_pages_show_the_maintenance_page(client, project, path):
    with database_unreachable():
        response = client.get(path.format(slug=project.slug))
    assert response.status_code == 503
    assert b"Down for maintenance" in response.content
    assert b"Traceback" not in response.content


def test_master_page_outage_is_not_a_debug_page_even_with_debug_on(client, project, settings):
    settings.DEBUG = True
    with database_unreachable():
        response = client.get(f"/{project.slug}/")
    assert response.status_code == 503
    assert b"Down for maintenance" in response.content


class FailingAfterTheView:
    """Middleware whose own database write fails after the view (as a session save can)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.get_response(request)
        raise OperationalError("server closed the connection unexpectedly")


def test_an_outage_raised_by_other_middleware_is_answered_too(project, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.FailingAfterTheView"]
    client = Client(raise_request_exception=False)
    response = client.post(f"/{project.slug}/cgi", data=b"<scheduler_request/>", content_type="text/xml")
    assert response.status_code == 200
    assert parse_reply(response.content).project_is_down is True


def test_other_errors_are_not_called_an_outage(project, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.FailingWithABug"]
    client = Client(raise_request_exception=False)
    response = client.get(f"/{project.slug}/")
    assert response.status_code == 500
    assert b"Down for maintenance" not in response.content


class FailingWithABug(FailingAfterTheView):
    def __call__(self, request: HttpRequest) -> HttpResponse:
        raise ValueError("a bug, not an outage")


class _Deadlock(Exception):
    sqlstate = "40P01"  # what psycopg's DeadlockDetected carries


def _deadlocked(**kwargs: object) -> None:
    try:
        raise _Deadlock("deadlock detected")
    except _Deadlock as exc:
        raise OperationalError("deadlock detected") from exc  # as Django wraps psycopg's error


def test_a_transaction_that_lost_a_race_gets_busy_not_project_down(client, project, settings, monkeypatch):
    settings.COBBLESTONE_BUSY_DELAY = 60
    monkeypatch.setattr("apps.scheduler.views.scheduler_request_handle", _deadlocked)
    response = post_scheduler(client, project.slug)
    reply = parse_reply(response.content)
    assert response.status_code == 200
    assert reply.project_is_down is False
    assert 60 <= reply.request_delay <= 90  # a busy server's delay, not the maintenance hour
    assert "busy" in reply.messages[0].text.lower()


def test_sqlite_busy_is_a_conflict_and_a_refused_connection_is_not():
    from apps.scheduler.middleware import is_conflict

    assert is_conflict(OperationalError("database is locked"))
    assert not is_conflict(OperationalError("connection refused"))


def test_a_lock_not_granted_by_postgresql_is_a_conflict(project):
    """The classification reads the SQLSTATE of the driver's own error."""
    from django.db import connection, connections, transaction

    from apps.projects.models import Project
    from apps.scheduler.middleware import is_conflict

    if connection.vendor != "postgresql":
        pytest.skip("row locks and SQLSTATEs are PostgreSQL's")
    other = connections.create_connection("default")
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute("SELECT id FROM projects_project WHERE id = %s FOR UPDATE", [project.id])
        with pytest.raises(OperationalError) as raised, transaction.atomic():
            list(Project.objects.select_for_update(nowait=True).filter(id=project.id))
        assert is_conflict(raised.value)
    finally:
        other.rollback()
        other.close()
