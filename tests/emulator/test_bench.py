"""bench_scheduler: the figures it prints, and one short run against gunicorn on SQLite."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.benchmarks.management.commands.bench_scheduler import Command
from apps.benchmarks.scheduler import (
    BenchOptions,
    BenchResult,
    bench_prefs,
    format_bench_table,
    free_port,
    lean_buffer_days,
    run_hosts,
)
from apps.emulator.live import LiveSummary


def _summary(latencies: tuple[float, ...] = (0.01, 0.02, 0.03, 0.04), **kw) -> LiveSummary:
    values = {
        "hosts": 4,
        "wall_seconds": 2.0,
        "sim_hours": 1.0,
        "rpcs": 4,
        "jobs_received": 40,
        "results_reported": 10,
        "results_acked": 10,
        "uploads": 0,
        "upload_note": "",
        "errors": (),
        "latencies": latencies,
    }
    values.update(kw)
    return LiveSummary(**values)


def test_rates_are_per_wall_second() -> None:
    summary = _summary()
    assert (summary.rpcs_per_second, summary.jobs_per_second) == (2.0, 20.0)


def test_latency_percentiles_are_nearest_rank() -> None:
    summary = _summary(latencies=tuple(i / 100 for i in range(1, 101)))
    assert (summary.latency(50), summary.latency(90), summary.latency(99)) == (0.5, 0.9, 0.99)


def test_unacknowledged_result_makes_the_run_not_ok() -> None:
    assert _summary(results_acked=9).ok is False


def test_table_has_a_row_per_database() -> None:
    result = BenchResult("SQLite", BenchOptions(), _summary(), "migrations", 1.0, 2.0, None, "")
    lines = format_bench_table([result]).splitlines()
    assert lines[2].split()[:4] == ["SQLite", "lean", "0.5", "3"]
    assert "p99 ms" in lines[0]


def test_database_cpu_shows_only_where_it_was_measured() -> None:
    sqlite = BenchResult("SQLite", BenchOptions(), _summary(), "migrations", 1.0, 2.0, None, "")
    postgres = BenchResult("PostgreSQL", BenchOptions(), _summary(), "migrations", 1.0, 2.0, 0.5, "")
    table = format_bench_table([sqlite, postgres]).splitlines()
    header, _, *rows = (re.split(r"\s{2,}", line.strip()) for line in table)
    at = header.index("database CPU ms/RPC")
    assert [row[at] for row in rows] == ["-", "125.0"]  # 0.5 s over 4 RPCs


def test_table_says_which_client_produced_the_figures() -> None:
    result = BenchResult(
        "SQLite", BenchOptions(client="emulated"), _summary(), "migrations", 1.0, 2.0, None, ""
    )
    header, _, row = (re.split(r"\s{2,}", line.strip()) for line in format_bench_table([result]).splitlines())
    assert (header[1], row[1]) == ("client", "emulated")


def test_table_gives_the_interval_and_jobs_per_rpc() -> None:
    result = BenchResult(
        "SQLite", BenchOptions(interval_hours=4.0), _summary(), "migrations", 1.0, 2.0, None, ""
    )
    header, _, row = (re.split(r"\s{2,}", line.strip()) for line in format_bench_table([result]).splitlines())
    assert (row[header.index("interval h")], row[header.index("jobs/RPC")]) == ("4", "10.0")  # 40 / 4


def test_buffer_is_split_between_minimum_and_additional() -> None:
    prefs = bench_prefs(0.5)
    assert (prefs.work_buf_min, prefs.work_buf_additional) == (0.25 * 86400, 0.25 * 86400)


def test_a_long_interval_gets_a_buffer_that_outlasts_it() -> None:
    assert (lean_buffer_days(0.5), lean_buffer_days(6.0)) == (0.1, 0.5)


def test_interval_option_reaches_the_options() -> None:
    assert _parse("--interval-hours", "4")["interval_hours"] == 4.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--interval-hours", "0"), "must be positive"),
        (("--interval-hours", "4", "--client", "emulated"), "applies to lean hosts"),
    ],
)
def test_a_meaningless_interval_is_refused(args, message) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("bench_scheduler", *args, "--database", "sqlite")


def _parse(*args: str) -> dict:
    return vars(Command().create_parser("manage.py", "bench_scheduler").parse_args(args))


def test_client_defaults_to_lean_hosts() -> None:
    assert _parse()["client"] == "lean"


def test_client_option_selects_the_emulated_hosts() -> None:
    assert _parse("--client", "emulated")["client"] == "emulated"


def test_unknown_client_is_refused() -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        _parse("--client", "fast")


def test_unknown_client_in_options_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown client"):
        run_hosts(BenchOptions(hosts=1, client="fast"), "http://127.0.0.1:9/bench/", ("key",))


def test_free_port_is_a_loopback_port() -> None:
    assert 1024 <= free_port() <= 65535


@pytest.mark.slow
def test_bench_scheduler_runs_hosts_against_gunicorn_on_sqlite() -> None:
    out = StringIO()
    call_command(
        "bench_scheduler",
        "--database",
        "sqlite",
        "--seconds",
        "4",
        "--jobs",
        "600",
        "--hosts",
        "4",
        stdout=out,
    )
    lines = out.getvalue().splitlines()
    header = re.split(r"\s{2,}", next(line for line in lines if line.startswith("database ")).strip())
    row = dict(
        zip(
            header,
            re.split(r"\s{2,}", next(line for line in lines if line.startswith("SQLite ")).strip()),
            strict=True,
        )
    )
    assert row["client"] == "lean"
    assert int(row["RPCs"]) > 0
    assert row["errors"] == "0"
