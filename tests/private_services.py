"""Private PostgreSQL and Redis servers that a test may stop, start and restart.

The shared servers of ``.ci/services.sh`` serve every test process on the machine and must
never be restarted; these run on a free loopback port in a temporary directory and are
gone when the test ends. As root, PostgreSQL runs as the ``postgres`` user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from apps.benchmarks.scheduler import free_port

ROOT = Path(__file__).resolve().parents[1]
PG_BIN = Path(os.environ.get("COBBLESTONE_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _require(path: Path | str, what: str) -> None:
    if Path(path).exists():
        return
    message = f"{what} is not installed ({path})"
    if os.environ.get("CI"):
        pytest.fail(f"{message}, and CI is set")
    pytest.skip(message)


class PrivatePostgres:
    """A PostgreSQL cluster of its own: ``url`` names its database ``cobblestone``.

    Its directory is made directly under the system's temporary directory: pytest's own
    temporary directories are private to root, where the ``postgres`` user cannot work.
    """

    def __init__(self) -> None:
        _require(PG_BIN / "initdb", "PostgreSQL")
        self.root = Path(tempfile.mkdtemp(prefix="cobblestone-private-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/cobblestone"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        self.start()
        self._run(
            str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "cobblestone"
        )

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")

    def _ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"), "-o", options, *args
        )

    def start(self) -> None:
        self._ctl("-w", "start")

    def stop(self) -> None:
        self._ctl("-w", "-m", "fast", "stop")

    def restart(self) -> None:
        self._ctl("-w", "-m", "fast", "restart")

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # already stopped
            self._ctl("-w", "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    try:
        yield server
    finally:
        server.close()


class PrivateRedis:
    """A Redis of its own, without persistence: ``url`` names its database 0."""

    def __init__(self, root: Path) -> None:
        _require(REDIS_SERVER, "Redis")
        self.root = root
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        self.start()

    def start(self) -> None:
        command = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]
        with (self.root / "log").open("ab") as log:
            self.proc = subprocess.Popen(command, cwd=self.root, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def private_redis(root: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(root)
    try:
        yield server
    finally:
        server.stop()


def server_env(var: Path, **settings: str) -> dict[str, str]:
    """The environment of a server process a test starts: this checkout's settings, its own
    var/ directory and the given settings (SQLite and the filesystem broker by default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="boincproj.settings",
        PYTHONPATH=str(ROOT),
        COBBLESTONE_VAR_DIR=str(var),
        COBBLESTONE_DATA_DIR=str(var / "data"),
        **settings,
    )
    return env
