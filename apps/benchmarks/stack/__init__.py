"""Cobblestone's production stack on loopback, for end-to-end tests, drills and benchmarks.

A ``Stack`` runs what a production server runs, configured only through an environment file
made from ``deploy/cobblestone.env.example``: PostgreSQL, Redis, gunicorn, a Celery worker,
Celery beat and nginx (TLS, with a self-signed certificate for 127.0.0.1), each on a free
loopback port. gunicorn, the worker and beat are started with the command lines of their
systemd units (``deploy/systemd/``, ExecStartPre then ExecStart), nginx with the site that
``deploy/render-nginx-site.sh`` writes from the same file. Starting also runs the install
step ``manage.py migrate``.

    with Stack(tmp_path / "stack", postgres_url=server_url) as stack:
        stack.base_url                        # https://127.0.0.1:<port>, what clients use
        stack.manage("make_project", "demo")  # manage.py with the stack's environment file
        stack.get("/health/")                 # (status, headers, body) through nginx
        stack.part("web").children()          # PIDs of gunicorn's worker processes
        stack.kill("web", child=True)         # SIGKILL one gunicorn worker (the master forks another)
        stack.kill("worker", child=True)      # SIGKILL one process of the Celery worker's pool
        stack.restart("postgres")             # fast shutdown and start (private server only)
        stack.restart("redis")                # the broker loses its queues (private server only)

Parts, by name: ``postgres`` and ``redis`` (private servers in the stack's directory unless a
``postgres_url`` server, on which a fresh database is made and later dropped, or a
``redis_url`` broker is given), ``web``, ``worker``, ``beat``, ``nginx`` (the ``parts``
argument picks which of these four run). ``start_part``/``stop_part`` start and stop one;
``restart`` is both; ``kill`` sends a signal (SIGKILL by default) to a part's main process or,
with ``child=True``, to one of its children, and returns the PID it signalled (a killed main
process stays down until ``start_part``). ``reconfigure`` rewrites the environment file
(restart the parts to apply it); ``new_database`` makes another empty database on the same
server. Each part logs to ``<directory>/logs/<part>.log``; ``part(name).log()`` reads it.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from apps.benchmarks.stack.databases import (
    PrivatePostgres,
    PrivateRedis,
    admin_sql,
    database_create,
    database_drop,
    fresh_database,
    private_redis,
    with_db,
)
from apps.benchmarks.stack.processes import (
    ManagedProcess,
    StackError,
    free_port,
    http_answers,
    port_open,
    running,
    tree_cpu_seconds,
)
from apps.benchmarks.stack.tls import self_signed_certificate, ssl_context
from apps.benchmarks.stack.units import (
    BASE_DIR,
    DEPLOY_DIR,
    ENV_EXAMPLE,
    env_file_read,
    env_file_write,
    unit_commands,
)

__all__ = [
    "ENV_EXAMPLE",
    "ManagedProcess",
    "Stack",
    "StackError",
    "admin_sql",
    "env_file_read",
    "env_file_write",
    "free_port",
    "fresh_database",
    "http_answers",
    "port_open",
    "running",
    "tree_cpu_seconds",
    "unit_commands",
    "with_db",
]

logger = logging.getLogger(__name__)
PROCESS_PARTS = ("web", "worker", "beat", "nginx")
UNITS = {
    "web": "cobblestone-web.service",
    "worker": "cobblestone-worker@.service",
    "beat": "cobblestone-beat.service",
}
WORKER_INSTANCE = "1"


class Stack:
    def __init__(
        self,
        directory: Path,
        *,
        postgres_url: str | None = None,
        redis_url: str | None = None,
        overrides: dict[str, str] | None = None,
        parts: tuple[str, ...] = PROCESS_PARTS,
        nginx: str = "nginx",
    ) -> None:
        unknown = set(parts) - set(PROCESS_PARTS)
        if unknown:
            raise ValueError(f"unknown parts {sorted(unknown)}; choose from {PROCESS_PARTS}")
        self.directory = directory
        self.parts = parts
        self.nginx = nginx
        self.overrides = dict(overrides or {})
        self.ports = {name: free_port() for name in ("web", "http", "https")}
        self.postgres_server = postgres_url
        self.postgres: PrivatePostgres | None = (
            None if postgres_url else PrivatePostgres(directory / "postgres")
        )
        self.redis: PrivateRedis | None = None if redis_url else private_redis(directory / "redis")
        self.redis_url = redis_url or (self.redis.url if self.redis else "")
        self.databases: list[str] = []
        self.cert_path, self.key_path = self_signed_certificate(directory / "tls")
        self.env_path = directory / "cobblestone.env"
        self.env: dict[str, str] = {}
        self._processes: dict[str, ManagedProcess] = {}
        self._pre: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._unset: dict[str, tuple[str, ...]] = {}

    # --- the whole stack -------------------------------------------------------------------

    def __enter__(self) -> Stack:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Databases, the environment file, ``migrate``, then web, worker, beat and nginx."""
        for sub in ("data", "var", "logs", "run", "nginx"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        if self.postgres is not None:
            self.postgres.start()
        if self.redis is not None:
            self.redis.start()
        self.reconfigure(DATABASE_URL=self.new_database())
        self.manage("migrate", "--noinput", "-v", "0")
        for name in self.parts:
            self.start_part(name)

    def stop(self) -> None:
        """Every part in reverse order, then the databases made for the stack."""
        for name in reversed(self.parts):
            if name in self._processes:
                self._processes[name].stop()
        if self.redis is not None:
            self.redis.stop()
        for url in self.databases:
            try:
                database_drop(url)
            except Exception as exc:  # the server may be the part that was killed
                logger.warning("stack: could not drop %s: %s", url, exc)
        self.databases.clear()
        if self.postgres is not None:
            self.postgres.stop()

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.ports['https']}"

    def new_database(self) -> str:
        """A new empty database on the stack's PostgreSQL server (dropped by ``stop``)."""
        server = self.postgres_server or (self.postgres.url if self.postgres else "")
        url = database_create(server, "cobblestone_stack")
        self.databases.append(url)
        return url

    def reconfigure(self, **values: str) -> None:
        """(Re)write the environment file: the example, this stack's addresses, ``overrides``,
        then ``values``. Running parts keep the old values until restarted."""
        env = env_file_read(ENV_EXAMPLE)
        env.update(
            SECRET_KEY=self.env.get("SECRET_KEY") or secrets.token_urlsafe(50),
            ALLOWED_HOSTS="127.0.0.1",
            CSRF_TRUSTED_ORIGINS=self.base_url,
            COBBLESTONE_BASE_URL=self.base_url,
            DATABASE_URL=self.env.get("DATABASE_URL", ""),
            CELERY_BROKER_URL=self.redis_url,
            # The rate limits' counters: a Redis database apart from the broker's, on the same
            # server, as the environment example has it.
            CACHE_URL=with_db(self.redis_url, "1"),
            COBBLESTONE_DATA_DIR=str(self.directory / "data"),
            COBBLESTONE_VAR_DIR=str(self.directory / "var"),
            GUNICORN_BIND=f"127.0.0.1:{self.ports['web']}",
            GUNICORN_WORKERS="2",
            NGINX_SERVER_NAME="127.0.0.1",
            NGINX_LISTEN_HTTP=f"127.0.0.1:{self.ports['http']}",
            NGINX_LISTEN_HTTPS=f"127.0.0.1:{self.ports['https']}",
            NGINX_TLS_CERTIFICATE=str(self.cert_path),
            NGINX_TLS_CERTIFICATE_KEY=str(self.key_path),
            NGINX_ACCESS_LOG=str(self.directory / "nginx" / "access.log"),
        )
        env.update(self.overrides)
        env.update(values)
        self.env = env
        env_file_write(self.env_path, env)

    def process_env(self, unset: tuple[str, ...] = ()) -> dict[str, str]:
        """A process's environment: the environment file's values and nothing of the caller's
        but PATH, HOME and the locale (as systemd gives a unit)."""
        base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
        env = {**base, **env_file_read(self.env_path)}
        for name in unset:
            env.pop(name, None)
        return env

    def manage(
        self,
        *args: str,
        check: bool = True,
        input: str | None = None,
        timeout: float = 600,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``manage.py`` as an operator runs it on the server: the environment file loaded,
        plus ``env`` (one-off variables such as DJANGO_SUPERUSER_PASSWORD)."""
        done = subprocess.run(
            [sys.executable, str(BASE_DIR / "manage.py"), *args],
            cwd=BASE_DIR,
            env={**self.process_env(), **(env or {})},
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise StackError(
                f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-5000:]}"
            )
        return done

    # --- one part ----------------------------------------------------------------------------

    def part(self, name: str) -> ManagedProcess:
        if name == "redis":
            if self.redis is None:
                raise StackError("redis is a given server: only a private one can be stopped or killed")
            return self.redis
        if name not in self._processes:
            self._processes[name] = self._build(name)
        return self._processes[name]

    def start_part(self, name: str) -> None:
        if name == "postgres":
            self._private_postgres().start()
            return
        process = self.part(name)
        process.env = self.process_env(self._unset.get(name, ()))
        if name == "nginx":
            self._nginx_site_write()  # from the environment file as it is now
        if name == "web":
            process.env["RUNTIME_DIRECTORY"] = str(self.directory / "run")  # systemd's RuntimeDirectory=
        for command in self._pre.get(name, ()):
            done = subprocess.run(
                list(command), cwd=BASE_DIR, env=process.env, capture_output=True, text=True
            )
            if done.returncode != 0:
                raise StackError(
                    f"{name}: {' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
                )
        process.start()

    def stop_part(self, name: str) -> None:
        if name == "postgres":
            self._private_postgres().stop()
        else:
            self.part(name).stop()

    def restart(self, name: str) -> None:
        self.stop_part(name)
        self.start_part(name)

    def kill(self, name: str, *, child: bool = False, sig: int = signal.SIGKILL) -> int:
        """Signal a part's main process, or one of its children; the PID signalled."""
        if name == "postgres":
            postgres = self._private_postgres()
            pid = int((postgres.data / "postmaster.pid").read_text().split()[0])
            postgres.kill(sig)
            return pid
        process = self.part(name)
        if not child:
            pid = process.pid
            process.kill(sig)
            return pid
        children = process.children()
        if not children:
            raise StackError(f"{name} has no child processes")
        os.kill(children[0], sig)
        return children[0]

    def _private_postgres(self) -> PrivatePostgres:
        if self.postgres is None:
            raise StackError("postgres is a given server: only a private one can be stopped or killed")
        return self.postgres

    # --- HTTP through nginx ------------------------------------------------------------------

    @property
    def ssl_context(self) -> Any:
        return ssl_context(self.cert_path)

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """GET ``path`` through nginx over HTTPS: (status, headers, body), error statuses too."""
        request = urllib.request.Request(self.base_url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30, context=self.ssl_context) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    # --- building the parts --------------------------------------------------------------------

    def _build(self, name: str) -> ManagedProcess:
        logs = self.directory / "logs"
        if name == "nginx":
            return self._nginx()
        if name not in UNITS:
            raise ValueError(f"no part {name!r}")
        commands = unit_commands(UNITS[name], self.env, instance=WORKER_INSTANCE)
        self._pre[name] = commands.pre
        self._unset[name] = commands.unset_environment
        if name == "web":
            bind = self.env["GUNICORN_BIND"]
            ready: Any = lambda: http_answers(f"http://{bind}/health/")  # noqa: E731
        elif name == "worker":
            node = f"worker{WORKER_INSTANCE}@{socket.gethostname()}"
            ready = lambda: _celery_answers(self.env["CELERY_BROKER_URL"], node)  # noqa: E731
        else:
            log = logs / f"{name}.log"
            ready = lambda: "beat: Starting" in log.read_text(errors="replace")  # noqa: E731
        return ManagedProcess(
            name=name,
            command=list(commands.start),
            env={},
            cwd=BASE_DIR,
            log_path=logs / f"{name}.log",
            ready=ready,
        )

    def _nginx(self) -> ManagedProcess:
        prefix = self.directory / "nginx"
        port = self.ports["https"]
        return ManagedProcess(
            name="nginx",
            command=[
                self.nginx,
                "-p",
                str(prefix),
                "-e",
                str(prefix / "error.log"),
                "-c",
                str(prefix / "nginx.conf"),
            ],
            env={},
            cwd=prefix,
            log_path=self.directory / "logs" / "nginx.log",
            ready=lambda: port_open(port),
            start_timeout=20,
        )

    def _nginx_site_write(self) -> None:
        """The site as deploy/render-nginx-site.sh writes it, in a main configuration that
        keeps nginx's files (pid, logs, temporary bodies) in the stack's directory."""
        prefix = self.directory / "nginx"
        rendered = subprocess.run(
            ["sh", str(DEPLOY_DIR / "render-nginx-site.sh"), str(self.env_path)],
            capture_output=True,
            text=True,
        )
        if rendered.returncode != 0:
            raise StackError(f"render-nginx-site.sh failed: {rendered.stderr}")
        site = prefix / "cobblestone.conf"
        site.write_text(rendered.stdout)
        temp = "\n".join(
            f"  {kind}_temp_path {prefix}/tmp-{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (prefix / "nginx.conf").write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"daemon off;\nworker_processes 2;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log warn;\n"
            "events { worker_connections 512; }\n"
            "http {\n  include /etc/nginx/mime.types;\n  default_type application/octet-stream;\n  sendfile on;\n"
            f"  access_log {prefix}/access.log;\n{temp}\n  include {site};\n}}\n"
        )


def _celery_answers(broker_url: str, node: str) -> bool:
    from celery import Celery

    app = Celery(broker=broker_url)
    try:
        return bool(app.control.ping(destination=[node], timeout=1.0))
    except Exception:
        return False
    finally:
        app.close()
