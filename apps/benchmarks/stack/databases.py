"""PostgreSQL and Redis for a stack: private servers in a directory, or given ones.

A private server can be restarted and killed (what a fault-injection test needs); a given
server (``make test``'s shared one) only lends fresh databases, dropped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from apps.benchmarks.stack.processes import ManagedProcess, StackError, child_pids, free_port

PG_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))


def with_db(url: str, name: str) -> str:
    """The database URL ``url`` with its database name replaced by ``name``."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def admin_sql(server_url: str, sql: str) -> None:
    """Run ``sql`` (CREATE/DROP DATABASE) on the server's ``postgres`` database, autocommit."""
    import psycopg

    with psycopg.connect(with_db(server_url, "postgres"), autocommit=True) as conn:
        conn.execute(sql)


def database_create(server_url: str, prefix: str = "cobblestone") -> str:
    """A new empty database on the server of ``server_url``; its URL."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    admin_sql(server_url, f'CREATE DATABASE "{name}"')
    return with_db(server_url, name)


def database_drop(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    admin_sql(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_database(database_url: str, prefix: str = "cobblestone_bench") -> Iterator[str]:
    """An empty database for the block: a new SQLite file, or a new PostgreSQL database on
    the server ``database_url`` names (dropped afterwards)."""
    if urlsplit(database_url).scheme.startswith("sqlite"):
        directory = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
        try:
            yield f"sqlite:///{directory / 'db.sqlite3'}"
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return
    url = database_create(database_url, prefix)
    try:
        yield url
    finally:
        database_drop(url)


class PrivatePostgres:
    """A PostgreSQL server of its own (initdb in ``directory``) on a free loopback port.

    As root the server runs as the ``postgres`` user (PostgreSQL refuses root). ``restart``
    is a fast shutdown and start; ``kill`` sends SIGKILL to the postmaster, and ``start``
    then recovers it as after a crash.
    """

    def __init__(self, directory: Path, port: int | None = None) -> None:
        if not PG_BIN_DIRS:
            raise StackError("PostgreSQL is not installed (/usr/lib/postgresql/*/bin)")
        self.bin = PG_BIN_DIRS[-1]
        self.directory = directory
        self.data = directory / "pgdata"
        self.port = port or free_port()
        self.runas = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self.runas, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise StackError(f"{' '.join(args[:2])} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.runas:
            # The postgres user must reach its directory through the caller's (often 0700).
            parent = self.directory.parent
            parent.chmod(parent.stat().st_mode | 0o011)
        if not (self.data / "PG_VERSION").exists():
            self.data.mkdir(parents=True, exist_ok=True)
            if self.runas:
                shutil.chown(self.directory, "postgres", "postgres")
                shutil.chown(self.data, "postgres", "postgres")
            self._run(
                str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"
            )
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.data} -c fsync=off -c max_connections=100"
        )
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-w", "-l", str(self.directory / "postgres.log"),
            "-o", options, "start",
        )  # fmt: skip

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(StackError):
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the postmaster; after SIGKILL, wait until its backends noticed and exited
        (until then they hold the shared memory and a new server refuses to start)."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        backends = child_pids(pid)
        os.kill(pid, sig)
        if sig != signal.SIGKILL:
            return
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in [pid, *backends]) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not _alive(pid):
            # A dead postmaster nobody has reaped yet still "exists" for the next one's check
            # of the lock files; the server is surely gone, so its lock files go too.
            for name in ("postmaster.pid", f".s.PGSQL.{self.port}.lock", f".s.PGSQL.{self.port}"):
                (self.data / name).unlink(missing_ok=True)

    def running(self) -> bool:
        return (
            subprocess.run(
                [*self.runas, str(self.bin / "pg_ctl"), "-D", str(self.data), "status"], capture_output=True
            ).returncode
            == 0
        )


@dataclass
class PrivateRedis(ManagedProcess):
    """redis-server of its own on a loopback port, without persistence; restart keeps the port."""

    port: int = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def private_redis(directory: Path, port: int | None = None) -> PrivateRedis:
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)

    def ready() -> bool:
        import redis

        try:
            return bool(redis.Redis(port=port, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    return PrivateRedis(
        name="redis",
        command=["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(directory)],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd=directory,
        log_path=directory / "redis.log",
        ready=ready,
        start_timeout=20,
        port=port,
    )  # fmt: skip
