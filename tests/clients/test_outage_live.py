"""gunicorn on a private PostgreSQL that is stopped and started again: while it is down the
clients get BOINC's "project is down" answers, and the first request after it is back is
served on a fresh connection (the kept one died with the server)."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.benchmarks.scheduler import SLUG, gunicorn
from apps.benchmarks.stack import free_port, running
from apps.protocol import parse_account_reply, parse_reply, render_request
from tests.private_services import ROOT, PrivatePostgres, private_postgres, server_env
from tests.scheduler.conftest import make_request

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrivatePostgres, dict[str, str]]]:
    with private_postgres() as server:
        var = tmp_path_factory.mktemp("var")
        env = server_env(
            var,
            DATABASE_URL=server.url,
            DEBUG="false",
            SECRET_KEY="outage-test-secret-key-0123456789-0123456789",
            ALLOWED_HOSTS="127.0.0.1",
            COBBLESTONE_SCHED_SLOTS="0",
        )
        for command in (["migrate", "--noinput", "-v", "0"], ["make_project", SLUG, "--name", "Outage"]):
            subprocess.run(
                [sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True
            )
        yield server, env


def fetch(url: str, body: bytes | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


RPC = render_request(make_request("0" * 32))


@pytest.fixture
def web(postgres, tmp_path: Path) -> Iterator[tuple[PrivatePostgres, str]]:
    """gunicorn with one thread: every request goes through the same kept connection."""
    server, env = postgres
    port = free_port()
    with running(gunicorn(env, port, workers=1, threads=1, log=tmp_path / "gunicorn.log")):
        yield server, f"http://127.0.0.1:{port}/{SLUG}"


def test_web_answers_project_down_while_postgres_is_stopped_and_recovers(web):
    server, base = web
    assert parse_reply(fetch(f"{base}/cgi", RPC)[1]).project_is_down is False

    server.stop()
    try:
        status, body = fetch(f"{base}/cgi", RPC)
        assert status == 200
        assert parse_reply(body).project_is_down is True
        status, body = fetch(f"{base}/")
        assert (status, b"Down for maintenance" in body) == (503, True)
        status, body = fetch(f"{base}/lookup_account.php?email_addr=a%40b.org")
        assert (status, parse_account_reply(body).error_num) == (200, -183)
    finally:
        server.start()

    reply = parse_reply(fetch(f"{base}/cgi", RPC)[1])
    assert reply.project_is_down is False
    assert "account key" in reply.messages[0].text


def test_the_first_rpc_after_a_restart_is_served_not_refused(web):
    server, base = web
    assert parse_reply(fetch(f"{base}/cgi", RPC)[1]).project_is_down is False
    server.restart()  # no request while it is down: the kept connection is dead, unnoticed
    reply = parse_reply(fetch(f"{base}/cgi", RPC)[1])
    assert reply.project_is_down is False
    assert "account key" in reply.messages[0].text
