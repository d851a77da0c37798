"""A daemon whose database goes away in the middle of a batch catches up once it is back.

Each daemon runs in a process of its own (tests.backend.daemon_process) on a private
PostgreSQL, passing every half second as Celery beat has it do. The test stops it in the
middle of a batch, after the batch's claim has committed (a row lock of the test's holds the
batch's transaction; the assimilator waits in its hook), then restarts PostgreSQL or
terminates the daemon's connection. Every workunit must be handled within 60 s of the
database's return: a claim the failed batch held must not wait for its lease.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from apps.work.domain.states import AssimilateState, FileDeleteState, ServerState
from tests.private_services import PrivatePostgres, private_postgres, server_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WORKUNITS = 400  # two batches of the transitioner and the validator
CATCH_UP = 60.0  # seconds from the database's return until every workunit is handled

# Per daemon: the workunits it has not handled yet, and a row its first batch locks (the
# test holds it, so the batch waits in its transaction); None: the batch waits in its hook.
UNHANDLED = {
    "transitioner": "SELECT count(DISTINCT r.workunit_id) FROM work_result r"
    f" WHERE r.server_state = {int(ServerState.IN_PROGRESS)}",
    "validator": "SELECT count(*) FROM work_workunit WHERE canonical_result_id IS NULL",
    "assimilator": f"SELECT count(*) FROM work_workunit WHERE assimilate_state <> {int(AssimilateState.DONE)}",
    "file_deleter": f"SELECT count(*) FROM work_workunit WHERE file_delete_state <> {int(FileDeleteState.DONE)}",
    "db_purge": "SELECT count(*) FROM work_workunit",
}
LOCKED = {
    "transitioner": "SELECT r.id FROM work_result r JOIN work_workunit w ON w.id = r.workunit_id"
    " ORDER BY w.transition_time, w.id, r.id LIMIT 1 FOR UPDATE OF r",
    "validator": "SELECT id FROM work_result ORDER BY workunit_id, id LIMIT 1 FOR UPDATE",
    "assimilator": None,
    "file_deleter": "SELECT f.id FROM work_inputfile f JOIN work_workunitfileref r ON r.file_id = f.id"
    " ORDER BY r.workunit_id LIMIT 1 FOR UPDATE OF f",
    "db_purge": "SELECT id FROM work_result ORDER BY workunit_id, id LIMIT 1 FOR UPDATE",
}


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        var = tmp_path_factory.mktemp("migrate")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env=_env(server, var),
            check=True,
            capture_output=True,
        )
        # Each test starts from the migrated database.
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE template_restart TEMPLATE cobblestone")
        yield server


def _env(server: PrivatePostgres, var: Path) -> dict[str, str]:
    return server_env(
        var,
        DATABASE_URL=server.url,
        DEBUG="false",
        SECRET_KEY="restart-test-secret-key-0123456789-0123456789",
        GATE_DIR=str(var / "gate"),
    )


@pytest.fixture
def database(postgres: PrivatePostgres, tmp_path: Path) -> dict[str, str]:
    """A fresh copy of the migrated database, and the environment of processes using it."""
    with psycopg.connect(postgres.url.replace("/cobblestone", "/postgres"), autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS cobblestone WITH (FORCE)")
        conn.execute("CREATE DATABASE cobblestone TEMPLATE template_restart")
    env = _env(postgres, tmp_path / "var")
    (tmp_path / "var" / "gate").mkdir(parents=True)
    return env


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "tests.backend.daemon_process", *args],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=600,
    )


def _count(url: str, sql: str) -> int | None:
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            return int(conn.execute(sql).fetchone()[0])
    except psycopg.OperationalError:
        return None


def _wait(what: str, until: Callable[[], bool], seconds: float, daemon: subprocess.Popen) -> float:
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if until():
            return time.monotonic() - began
        assert daemon.poll() is None, f"the daemon exited with {daemon.returncode}"
        time.sleep(0.2)
    raise AssertionError(f"{what} not within {seconds} s")


def _in_batch(url: str, name: str, env: dict[str, str], daemon: subprocess.Popen) -> None:
    """Wait until the daemon's first batch has claimed its workunits and waits in its
    transaction (on the test's lock, or in the assimilator's hook)."""
    if LOCKED[name] is None:
        reached = Path(env["GATE_DIR"]) / "reached"
        _wait("the hook's gate", reached.exists, 60, daemon)
        return
    waiting = (
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'cobblestone'"
    )
    _wait("the batch waiting for the lock", lambda: (_count(url, waiting) or 0) > 0, 60, daemon)


def _terminate_daemon(url: str, holder: psycopg.Connection) -> None:
    """Terminate the daemon's connection: every one but the test's lock holder and this one."""
    with psycopg.connect(url, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'cobblestone'"
            " AND backend_type = 'client backend' AND pid NOT IN (pg_backend_pid(), %s)",
            [holder.info.backend_pid],
        ).fetchone()
    assert killed is not None
    assert killed[0] >= 1


def _interrupt(
    postgres: PrivatePostgres, env: dict[str, str], name: str, fault: str, tmp_path: Path
) -> tuple[float, str]:
    """Seed, start the daemon, interrupt its first batch with ``fault``; the seconds from the
    database's return (or the kill) until every workunit was handled, and the daemon's log."""
    _manage(env, "seed", name, str(WORKUNITS))
    url = postgres.url
    log = tmp_path / "daemon.log"
    holder = psycopg.connect(url)
    if LOCKED[name] is not None:
        holder.execute(LOCKED[name]).fetchone()
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "tests.backend.daemon_process", "loop", name],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _in_batch(url, name, env, daemon)
        if fault == "restart":
            postgres.restart()
        else:
            _terminate_daemon(url, holder)
        back = time.monotonic()
        if not holder.closed:
            with contextlib.suppress(psycopg.OperationalError):  # the restart ended it
                holder.rollback()
        holder.close()
        (Path(env["GATE_DIR"]) / "open").touch()
        _wait(
            f"every workunit handled by the {name}",
            lambda: _count(url, UNHANDLED[name]) == 0,
            CATCH_UP + 30,
            daemon,
        )
        return time.monotonic() - back, log.read_text()
    finally:
        daemon.terminate()
        daemon.wait(30)


DAEMONS = list(UNHANDLED)


@pytest.mark.parametrize("name", DAEMONS)
def test_a_database_restart_in_a_batch_holds_no_workunit_for_the_lease(postgres, database, name, tmp_path):
    took, log = _interrupt(postgres, database, name, "restart", tmp_path)

    print(f"{name}: every workunit handled {took:.1f} s after the database's return")  # noqa: T201 - the figure, shown by pytest -s
    assert took < CATCH_UP, log


@pytest.mark.parametrize("name", DAEMONS)
def test_a_connection_terminated_in_a_batch_holds_no_workunit_for_the_lease(
    postgres, database, name, tmp_path
):
    took, log = _interrupt(postgres, database, name, "terminate", tmp_path)

    print(f"{name}: every workunit handled {took:.1f} s after the database's return")  # noqa: T201 - the figure, shown by pytest -s
    assert took < CATCH_UP, log
