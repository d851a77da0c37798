"""Live mode against a real server: emulated hosts over HTTP, every result acknowledged."""

from __future__ import annotations

import pytest

from apps.emulator.live import LiveConfig, format_summary, run_live, varied_hardware

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_twenty_hosts_run_three_hours_without_a_protocol_error(bench_project) -> None:
    config = LiveConfig(
        master_url=bench_project.project.master_url,
        hardware=tuple(varied_hardware(20)),
        authenticators=bench_project.authenticators,
        policy="mixed",
        sim_hours=3.0,
        speedup=1800.0,
        max_seconds=120.0,
    )
    summary = run_live(config)
    assert summary.ok, format_summary(summary)
    assert summary.errors == ()
    assert summary.results_reported == summary.results_acked > 0
