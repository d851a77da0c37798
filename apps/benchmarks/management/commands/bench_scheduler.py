"""Benchmark the scheduler: N hosts against gunicorn, on SQLite and PostgreSQL.

    python manage.py bench_scheduler [--hosts 40] [--seconds 30] [--workers 3] [--threads 4]
        [--database sqlite|postgres|both] [--database-url postgres://...] [--uploads]
        [--client lean|emulated [--policy rec|v6-gpu|v4|mixed]] [--interval-hours 0.5] [--busy-wait 5]
        [--profile [--rpcs 400]]

Each database gets a fresh database, migrated in a subprocess, a benchmark project and
gunicorn on a free loopback port (apps.benchmarks.scheduler lists the steps). PostgreSQL is used
when ``--database-url`` or COBBLESTONE_TEST_DATABASE_URL names a server. The load comes
from lean hosts (the default; cheap, so the machine's CPU goes to the server) or from
emulated hosts running a client policy (``--client emulated``). ``--profile`` runs the
scheduler service in-process under cProfile instead (last database chosen) and prints its
hotspots with file:line.
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from apps.benchmarks.scheduler import (
    CLIENTS,
    DEFAULT_BUSY_WAIT,
    DEFAULT_INTERVAL_HOURS,
    BenchError,
    BenchOptions,
    format_bench_table,
    run_benchmark,
    run_profile,
)
from apps.benchmarks.support import machine_description


class Command(BaseCommand):
    help = "Measure scheduler RPCs/s, jobs dispatched/s and RPC latency with emulated hosts."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--hosts", type=int, default=40, help="concurrent emulated hosts")
        parser.add_argument("--seconds", type=float, default=30.0, help="measured wall-clock seconds")
        parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
        parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
        parser.add_argument("--jobs", type=int, default=30_000, help="jobs created for the benchmark")
        parser.add_argument(
            "--client", default="lean", choices=CLIENTS, help="load generator: lean hosts or emulated clients"
        )
        parser.add_argument(
            "--policy",
            default="rec",
            choices=["rec", "v6-gpu", "v4", "mixed"],
            help="the emulated clients' policy (--client emulated)",
        )
        parser.add_argument(
            "--interval-hours",
            type=float,
            default=DEFAULT_INTERVAL_HOURS,
            help="simulated hours between a lean host's RPCs (longer: more jobs and reports per RPC)",
        )
        parser.add_argument("--uploads", action="store_true", help="also upload every output file")
        parser.add_argument(
            "--busy-wait",
            type=float,
            default=DEFAULT_BUSY_WAIT,
            help="wall seconds a lean host waits after a 'server busy' reply (its request_delay, scaled)",
        )
        parser.add_argument("--database", default="both", choices=["sqlite", "postgres", "both"])
        parser.add_argument(
            "--database-url", default="", help="PostgreSQL server URL (a database is made there)"
        )
        parser.add_argument("--profile", action="store_true", help="profile the scheduler service in-process")
        # Steps the benchmark runs in a subprocess against the fresh database.
        parser.add_argument("--internal-setup", action="store_true", help="(internal)")
        parser.add_argument("--internal-schema-from-models", action="store_true", help="(internal)")
        parser.add_argument("--internal-profile", action="store_true", help="(internal)")
        parser.add_argument("--rpcs", type=int, default=400, help="RPCs to profile with --profile")
        parser.add_argument("--top", type=int, default=25, help="rows of each profile table")
        parser.add_argument("--profile-out", default="", help="also save the raw cProfile data here")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["internal_schema_from_models"]:
            self._schema_from_models()
            return
        if opts["internal_setup"]:
            self._setup(jobs=opts["jobs"], hosts=opts["hosts"])
            return
        if opts["internal_profile"]:
            self._profile(
                hosts=opts["hosts"],
                rpcs=opts["rpcs"],
                top=opts["top"],
                dump=opts["profile_out"],
                client=opts["client"],
                policy=opts["policy"],
            )
            return
        options = BenchOptions(
            hosts=opts["hosts"],
            seconds=opts["seconds"],
            workers=opts["workers"],
            threads=opts["threads"],
            jobs=opts["jobs"],
            uploads=opts["uploads"],
            policy=opts["policy"],
            client=opts["client"],
            interval_hours=opts["interval_hours"],
            busy_wait=opts["busy_wait"],
        )
        if options.interval_hours <= 0:
            raise CommandError("--interval-hours must be positive")
        if options.client != "lean" and options.interval_hours != DEFAULT_INTERVAL_HOURS:
            raise CommandError(
                "--interval-hours applies to lean hosts (emulated clients call when their policy does)"
            )
        targets = []
        if opts["database"] in ("sqlite", "both"):
            targets.append(("SQLite", "sqlite:///bench.sqlite3"))
        pg_url = opts["database_url"] or os.environ.get("COBBLESTONE_TEST_DATABASE_URL", "")
        if opts["database"] in ("postgres", "both"):
            if pg_url:
                targets.append(("PostgreSQL", pg_url))
            elif opts["database"] == "postgres":
                raise CommandError("PostgreSQL needs --database-url or COBBLESTONE_TEST_DATABASE_URL")
            else:
                self.stdout.write("PostgreSQL skipped: no --database-url or COBBLESTONE_TEST_DATABASE_URL.")
        if opts["profile"]:
            label, url = targets[-1]
            self.stdout.write(
                f"Profiling the scheduler service on {label} ({opts['rpcs']} RPCs, {options.client} hosts)..."
            )
            try:
                self.stdout.write(
                    run_profile(url, options, rpcs=opts["rpcs"], top=opts["top"], dump=opts["profile_out"])
                )
            except BenchError as exc:
                raise CommandError(str(exc)) from exc
            return
        results = []
        for label, url in targets:
            self.stdout.write(
                f"{label}: fresh database, schema, {options.jobs} jobs, gunicorn, "
                f"{options.hosts} {options.client} hosts..."
            )
            try:
                result = run_benchmark(label, url, options, log=self.stderr.write)
            except BenchError as exc:
                raise CommandError(str(exc)) from exc
            results.append(result)
            self.stdout.write(
                f"  schema from {result.schema}; {result.summary.results_acked} results acknowledged"
            )
            for error in result.summary.errors[:5]:
                self.stdout.write(f"  error: {error}")
            if result.server_log:
                self.stdout.write("  end of gunicorn's log:\n" + result.server_log)
        self.stdout.write("")
        self.stdout.write(f"Machine: {machine_description()}")
        self.stdout.write(format_bench_table(results))

    def _setup(self, *, jobs: int, hosts: int) -> None:
        from apps.benchmarks.project import bench_project_create
        from apps.benchmarks.scheduler import SLUG

        bench = bench_project_create(slug=SLUG, njobs=jobs, naccounts=hosts)
        self.stdout.write(json.dumps({"authenticators": list(bench.authenticators)}))

    def _profile(self, *, hosts: int, rpcs: int, top: int, dump: str, client: str, policy: str) -> None:
        from apps.benchmarks.profiling import profile_hosts
        from apps.benchmarks.scheduler import profile_config

        keys = tuple(os.environ["COBBLESTONE_BENCH_AUTHENTICATORS"].split(","))
        config = profile_config(hosts, keys, policy=policy)
        self.stdout.write(profile_hosts(config, rpcs=rpcs, top=top, dump=dump, client=client))

    def _schema_from_models(self) -> None:
        """Create every table from the current models, ignoring migrations (pytest-django's way)."""
        from django.conf import settings

        class _NoMigrations(dict[str, None]):
            def __contains__(self, item: object) -> bool:
                return True

            def __getitem__(self, item: str) -> None:
                return None

        settings.MIGRATION_MODULES = _NoMigrations()
        call_command("migrate", run_syncdb=True, interactive=False, verbosity=0)
