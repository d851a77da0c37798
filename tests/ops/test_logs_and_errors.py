"""JSON logs (LOG_FORMAT=json) and error reports to a Sentry DSN, in processes of their own."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
LOG_ERROR = "import logging; logging.getLogger('apps.probe').error('probe %s', 'message-4711')"


def shell(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ["PATH"],
        "COBBLESTONE_VAR_DIR": str(tmp_path),
        "DATABASE_URL": "sqlite://:memory:",
        "DEBUG": "true",
    }
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=BASE_DIR, env={**base, **env}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_json_logs_are_one_object_per_line(tmp_path):
    done = shell(LOG_ERROR, tmp_path, LOG_FORMAT="json")
    record = json.loads(done.stderr.strip().splitlines()[-1])
    assert {k: record[k] for k in ("level", "logger", "message")} == {
        "level": "ERROR",
        "logger": "apps.probe",
        "message": "probe message-4711",
    }
    assert "time" in record


def test_an_unknown_log_format_is_refused_at_start(tmp_path):
    env = {
        "PATH": os.environ["PATH"],
        "COBBLESTONE_VAR_DIR": str(tmp_path),
        "DEBUG": "true",
        "LOG_FORMAT": "xml",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "LOG_FORMAT must be plain or json, got 'xml'" in done.stderr


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        _Collector.bodies.append(body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def sentry_server():
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    _Collector.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://publickey@127.0.0.1:{server.server_port}/1"
    server.shutdown()


def test_a_logged_error_is_sent_to_the_sentry_dsn(tmp_path, sentry_server):
    done = shell(LOG_ERROR, tmp_path, SENTRY_DSN=sentry_server)
    assert done.returncode == 0, done.stderr
    events = b"".join(_Collector.bodies)
    assert b"probe message-4711" in events
    assert b'"environment":"production"' in events


def test_without_a_dsn_nothing_is_sent(tmp_path, sentry_server):
    shell(LOG_ERROR, tmp_path)
    assert _Collector.bodies == []
