"""Locality scheduling end to end: simulated hosts against the real scheduler RPC.

Same workload twice (32 hosts, 24 large files of 20 MB, 16 workunits per file,
target_nresults 2), once with locality scheduling and once without; the clients keep
every sticky file they are sent until told to delete it.
"""

from __future__ import annotations

import statistics
from io import StringIO

import pytest
from django.core.management import call_command

from apps.benchmarks.locality_simulation import (
    SimulationConfig,
    SimulationOutcome,
    simulation_run,
    simulation_setup,
)
from apps.core import clock
from apps.projects.models import Project
from apps.scheduler.services import scheduler_request_handle

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

CONFIG = SimulationConfig(hosts=32, files=24, workunits_per_file=16, target_nresults=2)


def run(tmp_path, *, locality: bool) -> SimulationOutcome:
    project = simulation_setup(
        slug=f"sim-{'on' if locality else 'off'}", config=CONFIG, locality=locality, work_dir=tmp_path
    )

    def transport(req):
        return scheduler_request_handle(project=Project.objects.get(pk=project.pk), req=req, now=clock.now())

    return simulation_run(project=project, config=CONFIG, transport=transport)


def test_locality_sends_each_file_to_about_m_hosts_and_cuts_bytes_five_fold(tmp_path):
    on = run(tmp_path, locality=True)
    off = run(tmp_path, locality=False)

    total = CONFIG.files * CONFIG.workunits_per_file * CONFIG.target_nresults
    for outcome in (on, off):  # both did all the work
        assert (outcome.results, outcome.results_sent, outcome.results_reported) == (total, total, total)

    # Each file needs at least M hosts (one result of a workunit per host); most get exactly M.
    assert min(on.downloads_per_file) == CONFIG.target_nresults
    assert statistics.median(on.downloads_per_file) == CONFIG.target_nresults
    assert on.mean_downloads_per_file <= 1.5 * CONFIG.target_nresults
    assert off.mean_downloads_per_file >= 5 * CONFIG.target_nresults

    assert off.bytes_sent >= 5 * on.bytes_sent
    assert on.deletes > 0  # finished files were deleted from the hosts


def test_bench_command_prints_both_figures_and_leaves_nothing_behind():
    out = StringIO()
    call_command(
        "bench_locality", hosts=6, files=4, workunits_per_file=3, file_mb=1, jobs_per_rpc=2, stdout=out
    )
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[1].split()[:4] == ["locality", "results", "sent", "RPCs"]
    assert lines[3].startswith("on ")
    assert lines[4].startswith("off ")
    assert " 24/24 " in lines[3]
    assert " 24/24 " in lines[4]
    assert lines[5].startswith("ratio (bytes without / with locality): ")
    assert not Project.objects.filter(slug__startswith="bench-locality").exists()
