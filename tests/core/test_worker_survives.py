"""A Celery worker on a private PostgreSQL (and Redis) keeps working when the server restarts.

The worker's main process records an expired beat tick as REVOKED in the result table;
with the connection it opened before a restart, that write used to raise
``OperationalError('the connection is closed')`` out of the message handler, and Celery
stopped the worker for good.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from celery import Celery

from tests.private_services import PrivatePostgres, private_postgres, private_redis, server_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASK = "work.purge"  # a real daemon pass that is quick on an empty database


def worker_env(database_url: str, var: Path, **extra: str) -> dict[str, str]:
    return server_env(
        var,
        DATABASE_URL=database_url,
        DEBUG="false",
        SECRET_KEY="worker-test-secret-key-0123456789-0123456789",
        LOG_LEVEL="INFO",
        **extra,
    )


def sender(env: dict[str, str]) -> Celery:
    """A Celery app that sends to the worker's broker (the settings' filesystem one, or Redis)."""
    url = env.get("CELERY_BROKER_URL", "filesystem://")
    app = Celery("test-sender", broker=url)
    if url.startswith("filesystem://"):
        broker = Path(env["COBBLESTONE_VAR_DIR"]) / "broker"
        app.conf.broker_transport = "boincproj.broker:Transport"
        app.conf.broker_transport_options = {
            "data_folder_in": str(broker / "out"),
            "data_folder_out": str(broker / "out"),
            "processed_folder": str(broker / "processed"),
            "control_folder": str(broker / "control"),
            "store_processed": False,
        }
        for sub in ("out", "processed", "control"):
            (broker / sub).mkdir(parents=True, exist_ok=True)
    return app


def task_state(database_url: str, task_id: str) -> str | None:
    try:
        with psycopg.connect(database_url, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT status FROM django_celery_results_taskresult WHERE task_id = %s", (task_id,)
            ).fetchone()
    except psycopg.OperationalError:
        return None
    return row[0] if row else None


def wait_for_state(
    database_url: str, task_id: str, state: str, worker: subprocess.Popen, seconds: float = 90
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if task_state(database_url, task_id) == state:
            return
        assert worker.poll() is None, f"the worker exited with {worker.returncode}"
        time.sleep(0.3)
    raise AssertionError(f"task {task_id} did not reach {state} (now {task_state(database_url, task_id)})")


def send(app: Celery, *, expired: bool = False) -> str:
    options = {"expires": datetime.now(UTC) - timedelta(seconds=30)} if expired else {}
    return app.send_task(TASK, **options).id


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        var = tmp_path_factory.mktemp("migrate")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=worker_env(server.url, var),
            check=True,
            capture_output=True,
        )
        yield server


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator:
    procs: list[subprocess.Popen] = []

    def start(env: dict[str, str]) -> subprocess.Popen:
        log = (tmp_path / f"worker{len(procs)}.log").open("wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "boincproj",
                "worker",
                "--concurrency",
                "1",
                "--loglevel",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_worker_survives_a_database_restart(postgres, start_worker, tmp_path):
    env = worker_env(postgres.url, tmp_path / "var")
    app = sender(env)
    worker = start_worker(env)
    wait_for_state(postgres.url, send(app), "SUCCESS", worker)
    wait_for_state(postgres.url, send(app, expired=True), "REVOKED", worker)  # the main process writes

    postgres.restart()

    wait_for_state(postgres.url, send(app, expired=True), "REVOKED", worker)
    wait_for_state(postgres.url, send(app), "SUCCESS", worker)
    assert worker.poll() is None


def test_worker_survives_an_expired_tick_while_the_database_is_down(postgres, start_worker, tmp_path):
    env = worker_env(postgres.url, tmp_path / "var")
    app = sender(env)
    worker = start_worker(env)
    wait_for_state(postgres.url, send(app, expired=True), "REVOKED", worker)

    postgres.stop()
    try:
        lost = send(app, expired=True)
        log = tmp_path / "worker0.log"
        deadline = time.monotonic() + 60
        while lost not in log.read_text(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.3)
        time.sleep(2)  # the write fails on reconnecting, within the connect timeout
        assert worker.poll() is None
    finally:
        postgres.start()

    wait_for_state(postgres.url, send(app), "SUCCESS", worker)
    assert task_state(postgres.url, lost) is None  # logged, not recorded


@pytest.mark.redis
def test_worker_survives_a_broker_restart(postgres, start_worker, tmp_path):
    with private_redis(tmp_path / "redis") as redis:
        env = worker_env(postgres.url, tmp_path / "var", CELERY_BROKER_URL=redis.url)
        app = sender(env)
        worker = start_worker(env)
        wait_for_state(postgres.url, send(app), "SUCCESS", worker)

        redis.restart()

        wait_for_state(postgres.url, send(app), "SUCCESS", worker)
        assert worker.poll() is None
