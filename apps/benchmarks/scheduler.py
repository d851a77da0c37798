"""The scheduler benchmark: a fresh database, gunicorn on loopback, emulated hosts over HTTP.

Steps of one benchmark (``run_benchmark``):

1. create an empty database: an SQLite file, or a new PostgreSQL database on the server
   named by the URL;
2. build its schema in a subprocess (``manage.py migrate --run-syncdb``; when the models
   are ahead of their migrations, from the models directly, as ``pytest --no-migrations``
   does);
3. create the benchmark project (apps, jobs, accounts) in a subprocess;
4. start gunicorn (gthread workers) on a free loopback port against that database;
5. run the hosts free-running for the given seconds and collect the figures: lean hosts
   (apps/benchmarks/lean.py, a FIFO queue per resource: about 5 ms of CPU per RPC, most of it the
   XML codec) or emulated ones (the client policies: 12-14 ms per RPC); the load generator
   shares the machine with the server, so the cheaper it is the more CPU the server gets;
6. stop gunicorn and drop the database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from apps.benchmarks.lean import INTERVAL as LEAN_INTERVAL
from apps.benchmarks.lean import LeanConfig, run_lean
from apps.benchmarks.stack import (
    ManagedProcess,
    StackError,
    free_port,
    fresh_database,
    http_answers,
    running,
    tree_cpu_seconds,
)
from apps.benchmarks.support import postgres_cpu_seconds
from apps.emulator.domain.model import ClientPrefs
from apps.emulator.live import LiveConfig, LiveSummary, run_live, varied_hardware

BASE_DIR = Path(__file__).resolve().parents[2]
MANAGE = BASE_DIR / "manage.py"
SLUG = "bench"
CLIENTS = ("lean", "emulated")  # the load generators: lean.py's hosts, or host.py's
# Free-running hosts refill about a CPU-hour per instance per RPC, as a client with a
# 0.05 + 0.05 day buffer does.
BENCH_BUFFER_DAYS = 0.1


def bench_prefs(buffer_days: float = BENCH_BUFFER_DAYS) -> ClientPrefs:
    """A client's work buffer of ``buffer_days`` (half minimum, half additional)."""
    half = buffer_days / 2 * 86400
    return ClientPrefs(work_buf_min=half, work_buf_additional=half, cpu_scheduling_period=3600.0)


BENCH_PREFS = bench_prefs()
DEFAULT_INTERVAL_HOURS = LEAN_INTERVAL / 3600
DEFAULT_BUSY_WAIT = 5.0


def lean_buffer_days(interval_hours: float) -> float:
    """A buffer that outlasts the time between RPCs twice over, so no instance runs dry."""
    return max(BENCH_BUFFER_DAYS, 2 * interval_hours / 24)


class BenchError(RuntimeError):
    """A benchmark step failed; the message says which, with the subprocess's output."""


@dataclass(frozen=True, slots=True)
class BenchOptions:
    hosts: int = 40
    seconds: float = 30.0
    workers: int = 3
    threads: int = 4
    jobs: int = 30_000
    uploads: bool = False
    policy: str = "rec"  # the emulated hosts' client policy
    client: str = "lean"  # one of CLIENTS
    # Simulated hours between two RPCs of a lean host. Each RPC reports what finished in
    # that time and asks for as much again, so a longer interval means more jobs and
    # reports per RPC (real clients with day-sized buffers call every few hours).
    interval_hours: float = DEFAULT_INTERVAL_HOURS
    # Wall seconds a lean host waits after a "server busy" reply (it stands for the reply's
    # request_delay of minutes, which a run of seconds cannot show).
    busy_wait: float = DEFAULT_BUSY_WAIT


@dataclass(frozen=True, slots=True)
class BenchResult:
    label: str
    options: BenchOptions
    summary: LiveSummary
    schema: str  # how the schema was built
    client_cpu: float  # CPU seconds of the emulated hosts (this process)
    server_cpu: float  # CPU seconds of gunicorn's processes
    database_cpu: float | None  # CPU seconds of a PostgreSQL server on this machine (None: SQLite, remote)
    server_log: str  # the end of gunicorn's log when something went wrong
    load: tuple[float, float] = (0.0, 0.0)  # the machine's 1-minute load average before, after


def run_benchmark(
    label: str, database_url: str, options: BenchOptions, log: Callable[[str], object] = lambda _: None
) -> BenchResult:
    """Run the whole benchmark against a fresh database made from ``database_url``;
    ``log`` gets a line as each step starts and ends."""
    with fresh_database(database_url) as url, tempfile.TemporaryDirectory(prefix="cobblestone-bench-") as tmp:
        port = free_port()
        env = server_env(url, port, Path(tmp))
        started = time.monotonic()
        log(f"{label}: building the schema...")
        schema = build_schema(env)
        log(f"{label}: schema from {schema} ({time.monotonic() - started:.0f} s); creating the project...")
        authenticators = setup_project(env, jobs=options.jobs, accounts=options.hosts)
        log(f"{label}: {options.jobs:,} jobs, {options.hosts} accounts ({time.monotonic() - started:.0f} s)")
        server = gunicorn(
            env, port, workers=options.workers, threads=options.threads, log=Path(tmp) / "gunicorn.log"
        )
        try:
            with running(server):
                local_pg = _is_local_postgres(url)
                load_before = os.getloadavg()[0]
                server_before, client_before = tree_cpu_seconds(server.pid), time.process_time()
                database_before = postgres_cpu_seconds() if local_pg else 0.0
                log(f"{label}: {options.hosts} {options.client} hosts for {options.seconds:.0f} s...")
                summary = run_hosts(options, f"http://127.0.0.1:{port}/{SLUG}/", authenticators)
                server_cpu, client_cpu = (
                    tree_cpu_seconds(server.pid) - server_before,
                    time.process_time() - client_before,
                )
                database_cpu = postgres_cpu_seconds() - database_before if local_pg else None
                load = (load_before, os.getloadavg()[0])
        except StackError as exc:
            raise BenchError(str(exc)) from exc
        tail = _log_tail(server.log_path) if not summary.ok else ""
    return BenchResult(label, options, summary, schema, client_cpu, server_cpu, database_cpu, tail, load)


def run_hosts(options: BenchOptions, master_url: str, authenticators: tuple[str, ...]) -> LiveSummary:
    """The load: ``options.hosts`` hosts of ``options.client`` making RPCs back to back."""
    hardware = tuple(varied_hardware(options.hosts))
    if options.client == "lean":
        return run_lean(
            LeanConfig(
                master_url=master_url,
                hardware=hardware,
                authenticators=authenticators,
                max_seconds=options.seconds,
                interval=options.interval_hours * 3600,
                prefs=bench_prefs(lean_buffer_days(options.interval_hours)),
                uploads=options.uploads,
                busy_wait=options.busy_wait,
            )
        )
    if options.client == "emulated":
        return run_live(
            LiveConfig(
                master_url=master_url,
                hardware=hardware,
                authenticators=authenticators,
                policy=options.policy,
                sim_hours=1e6,
                speedup=None,
                max_seconds=options.seconds,
                uploads=options.uploads,
                report_delay=6 * 3600.0,
                prefs=BENCH_PREFS,
            )
        )
    raise ValueError(f"unknown client {options.client!r}: one of {', '.join(CLIENTS)}")


def _log_tail(log: Path) -> str:
    """The distinct exception lines of gunicorn's log, then its last lines."""
    text = log.read_text(errors="replace")
    errors = sorted(
        {line for line in text.splitlines() if "Error" in line or "DETAIL" in line or "CONTEXT" in line}
    )
    return "\n".join([*errors[:40], "...", text[-1500:]])


def _is_local_postgres(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.startswith("postgres") and parts.hostname in ("127.0.0.1", "localhost", "::1")


def server_env(database_url: str, port: int, tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url,
        COBBLESTONE_BASE_URL=f"http://127.0.0.1:{port}",
        COBBLESTONE_DATA_DIR=str(tmp / "data"),
        COBBLESTONE_VAR_DIR=str(tmp / "var"),
        DEBUG="false",
        SECRET_KEY="bench-only-secret-key-not-for-production-use-0123456789",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(BASE_DIR),
    )
    (tmp / "var").mkdir(parents=True, exist_ok=True)
    return env


def _manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(MANAGE), *args], cwd=BASE_DIR, env=env, capture_output=True, text=True
    )
    if check and proc.returncode != 0:
        raise BenchError(f"manage.py {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return proc


def build_schema(env: dict[str, str]) -> str:
    """Migrate; if the models are ahead of the migrations, build the schema from the models."""
    if _manage(env, "makemigrations", "--check", "--dry-run", check=False).returncode == 0:
        _manage(env, "migrate", "--noinput", "--run-syncdb")
        return "migrations"
    _manage(env, "bench_scheduler", "--internal-schema-from-models")
    return "models (migrations are behind the models)"


def setup_project(env: dict[str, str], *, jobs: int, accounts: int) -> tuple[str, ...]:
    proc = _manage(env, "bench_scheduler", "--internal-setup", "--jobs", str(jobs), "--hosts", str(accounts))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise BenchError(f"project setup printed no authenticators:\n{proc.stdout[-2000:]}")
    return tuple(json.loads(lines[-1])["authenticators"])


def gunicorn(env: dict[str, str], port: int, *, workers: int, threads: int, log: Path) -> ManagedProcess:
    """gunicorn on 127.0.0.1:port with the production configuration (deploy/gunicorn.conf.py)."""
    server_env = {
        **env,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(workers),
        "GUNICORN_THREADS": str(threads),
        "GUNICORN_TIMEOUT": "120",
    }
    command = [sys.executable, "-m", "gunicorn", "-c", str(BASE_DIR / "deploy" / "gunicorn.conf.py")]
    url = f"http://127.0.0.1:{port}/{SLUG}/get_project_config.php"
    return ManagedProcess(
        name="gunicorn",
        command=command,
        env=server_env,
        cwd=BASE_DIR,
        log_path=log,
        ready=lambda: http_answers(url),
    )


def format_bench_table(results: list[BenchResult]) -> str:
    header = [
        "database",
        "client",
        "interval h",
        "workers x threads",
        "hosts",
        "seconds",
        "RPCs",
        "busy",
        "RPCs/s",
        "jobs/s",
        "jobs/RPC",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "server CPU ms/RPC",
        "database CPU ms/RPC",
        "client CPU ms/RPC",
        "errors",
        "load before/after",
    ]
    rows = []
    for r in results:
        s = r.summary
        rows.append(
            [
                r.label,
                r.options.client,
                f"{r.options.interval_hours:g}" if r.options.client == "lean" else "-",
                f"{r.options.workers} x {r.options.threads}",
                str(s.hosts),
                f"{s.wall_seconds:.1f}",
                str(s.rpcs),
                str(s.busy),
                f"{s.rpcs_per_second:.1f}",
                f"{s.jobs_per_second:.1f}",
                f"{s.jobs_received / max(s.rpcs, 1):.1f}",
                *(f"{s.latency(p) * 1000:.1f}" for p in (50, 90, 99)),
                f"{r.server_cpu / max(s.rpcs, 1) * 1000:.1f}",
                "-" if r.database_cpu is None else f"{r.database_cpu / max(s.rpcs, 1) * 1000:.1f}",
                f"{r.client_cpu / max(s.rpcs, 1) * 1000:.1f}",
                str(len(s.errors)),
                f"{r.load[0]:.1f}/{r.load[1]:.1f}",
            ]
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row))
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run_profile(database_url: str, options: BenchOptions, *, rpcs: int, top: int = 25, dump: str = "") -> str:
    """cProfile of the scheduler service on a fresh benchmark database (see profiling.py)."""
    with fresh_database(database_url) as url, tempfile.TemporaryDirectory(prefix="cobblestone-prof-") as tmp:
        env = server_env(url, 80, Path(tmp))
        env["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
        build_schema(env)
        authenticators = setup_project(env, jobs=options.jobs, accounts=options.hosts)
        env["COBBLESTONE_BENCH_AUTHENTICATORS"] = ",".join(authenticators)
        proc = _manage(
            env,
            "bench_scheduler",
            "--internal-profile",
            "--hosts",
            str(options.hosts),
            "--rpcs",
            str(rpcs),
            "--top",
            str(top),
            "--client",
            options.client,
            "--policy",
            options.policy,
            *(["--profile-out", str(Path(dump).resolve())] if dump else []),
        )
        return proc.stdout


def profile_config(hosts: int, authenticators: tuple[str, ...], *, policy: str = "rec") -> LiveConfig:
    return LiveConfig(
        master_url=f"http://testserver/{SLUG}/",
        hardware=tuple(varied_hardware(hosts)),
        authenticators=authenticators,
        policy=policy,
        sim_hours=1e6,
        speedup=None,
        uploads=False,
        report_delay=6 * 3600.0,
        prefs=BENCH_PREFS,
    )
