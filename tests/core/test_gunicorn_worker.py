"""boincproj.gunicorn_worker: each request reaches Django stamped with when it was queued."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from apps.benchmarks.scheduler import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def get(port: int, path: str, headers: dict[str, str] | None = None) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture
def server(tmp_path: Path):
    port = free_port()
    release = tmp_path / "release"
    command = [sys.executable, "-m", "gunicorn", "tests.core.wsgi_echo:app", "--bind", f"127.0.0.1:{port}"]
    command += [
        "--worker-class",
        "boincproj.gunicorn_worker.ThreadWorker",
        "--workers",
        "1",
        "--threads",
        "1",
    ]
    env = {**os.environ, "ECHO_RELEASE_FILE": str(release), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            get(port, "/echo")
            break
        except OSError:
            assert proc.poll() is None, "gunicorn exited"
            assert time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.2)
    yield port, release
    release.touch()
    proc.terminate()
    proc.wait(timeout=30)


def test_a_request_carries_the_time_it_was_queued_not_what_the_client_sent(server):
    port, _ = server
    before = time.time()
    seen = get(port, "/echo", {"X-Request-Start": "t=1"})
    stamp = float(seen["start"].removeprefix("t="))
    assert before - 1 <= stamp <= seen["handled"]


def test_the_stamp_shows_the_wait_behind_a_busy_thread(server):
    port, release = server
    holder = threading.Thread(target=get, args=(port, "/hold"))
    holder.start()
    time.sleep(0.5)  # the only thread is now held
    released = threading.Timer(2.0, release.touch)
    released.start()
    seen = get(port, "/echo")  # queued until /hold ends, at least 2 s from now
    holder.join()
    waited = seen["handled"] - float(seen["start"].removeprefix("t="))
    assert waited >= 1.0
