"""Measure locality scheduling: large-file bytes sent with and without it, on one workload.

Creates two throw-away projects (locality on, locality off) with the same large files,
workunits and simulated hosts, drives the real scheduler over in-process HTTP (the same
XML the BOINC client sends), prints a table, then rolls everything back. Run it on a
quiet server or against a scratch DATABASE_URL: on SQLite it holds the write lock while
it runs.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.test import Client
from django.test.utils import override_settings

from apps.benchmarks.locality_simulation import (
    SimulationConfig,
    SimulationOutcome,
    Transport,
    simulation_run,
    simulation_setup,
)
from apps.projects.models import Project
from apps.protocol import SchedulerReply, SchedulerRequest, parse_reply, render_request


def http_transport(project: Project) -> Transport:
    """The scheduler URL the BOINC client posts to, served in-process."""
    hosts = [h for h in settings.ALLOWED_HOSTS if h and "*" not in h and not h.startswith(".")]
    client = Client(HTTP_HOST=hosts[0] if hosts else "testserver")
    url = f"/{project.slug}/cgi"

    def send(req: SchedulerRequest) -> SchedulerReply:
        response = client.post(
            url, data=render_request(req), content_type="application/x-www-form-urlencoded"
        )
        if response.status_code != 200:
            raise RuntimeError(f"scheduler answered HTTP {response.status_code}")
        return parse_reply(response.content)

    return send


class Command(BaseCommand):
    help = "Simulate hosts with and without locality scheduling and print large-file bytes sent."

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = SimulationConfig()
        parser.add_argument("--hosts", type=int, default=defaults.hosts)
        parser.add_argument("--files", type=int, default=defaults.files)
        parser.add_argument("--workunits-per-file", type=int, default=defaults.workunits_per_file)
        parser.add_argument("--target-nresults", type=int, default=defaults.target_nresults)
        parser.add_argument("--file-mb", type=float, default=defaults.file_nbytes / 1e6)
        parser.add_argument("--jobs-per-rpc", type=int, default=defaults.jobs_per_rpc)
        parser.add_argument("--seed", type=int, default=defaults.seed)

    def handle(self, *args: Any, **options: Any) -> None:
        config = SimulationConfig(
            hosts=options["hosts"],
            files=options["files"],
            workunits_per_file=options["workunits_per_file"],
            target_nresults=options["target_nresults"],
            file_nbytes=int(options["file_mb"] * 1e6),
            jobs_per_rpc=options["jobs_per_rpc"],
            seed=options["seed"],
        )
        outcomes: list[tuple[SimulationOutcome, float]] = []
        with (
            tempfile.TemporaryDirectory() as tmp,
            override_settings(COBBLESTONE_DATA_DIR=Path(tmp) / "data"),
            transaction.atomic(),
        ):
            for locality in (True, False):
                slug = f"bench-locality-{'on' if locality else 'off'}"
                project = simulation_setup(slug=slug, config=config, locality=locality, work_dir=Path(tmp))
                started = time.monotonic()
                outcome = simulation_run(project=project, config=config, transport=http_transport(project))
                outcomes.append((outcome, time.monotonic() - started))
            transaction.set_rollback(True)  # a benchmark leaves nothing behind
        self._print(config, outcomes)

    def _print(self, config: SimulationConfig, outcomes: list[tuple[SimulationOutcome, float]]) -> None:
        self.stdout.write(
            f"{config.hosts} hosts, {config.files} large files of {config.file_nbytes / 1e6:g} MB, "
            f"{config.workunits_per_file} workunits per file, target_nresults {config.target_nresults}, "
            f"{config.jobs_per_rpc} jobs per request"
        )
        header = (
            f"{'locality':<9}{'results sent':>13}{'RPCs':>7}{'downloads':>11}{'MB sent':>11}"
            f"{'per file: mean':>16}{'median':>8}{'max':>6}{'deletes':>9}{'seconds':>9}"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for outcome, seconds in outcomes:
            self.stdout.write(
                f"{'on' if outcome.locality else 'off':<9}"
                f"{outcome.results_sent:>6}/{outcome.results:<6}"
                f"{outcome.rpcs:>7}{outcome.downloads:>11}{outcome.bytes_sent / 1e6:>11.0f}"
                f"{outcome.mean_downloads_per_file:>16.2f}"
                f"{statistics.median(outcome.downloads_per_file or (0,)):>8.1f}"
                f"{outcome.max_downloads_per_file:>6}{outcome.deletes:>9}{seconds:>9.1f}"
            )
        on, off = outcomes[0][0], outcomes[1][0]
        ratio = off.bytes_sent / on.bytes_sent if on.bytes_sent else float("inf")
        self.stdout.write(f"ratio (bytes without / with locality): {ratio:.2f}")
