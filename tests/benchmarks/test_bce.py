"""Support for comparing the emulator with BOINC's own client emulator (BCE); BCE not needed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apps.benchmarks.bce import (
    BceError,
    DailyUsage,
    compare,
    comparison_windows,
    format_rows,
    patch_sim_source,
    report_usage,
    shorten_year,
    write_inputs,
)
from apps.core.domain.resources import ProcType
from apps.emulator.domain import load_scenario, run_scenario
from apps.emulator.domain.model import DAY

# The lines of client/sim.cpp the patch anchors to, in their order there.
SIM_CPP = """SIM_RESULTS sim_results;
void get_apps_needing_work(PROJECT* p, vector<APP*>& apps) {
    for (APP* app: gstate.apps) {
        if (app->ignore) continue;
        if (!has_app_version_needing_work(app)) continue;
    }
}
        rp->project->idle = false;
    check_app_config(infile_prefix);
    html_end();
}
"""


def test_patch_holds_apps_and_logs_daily_usage() -> None:
    patched = patch_sim_source(SIM_CPP)
    assert "if (cmp_held(app->name, gstate.now)) continue;" in patched
    assert "cmp_add_usage(cmp_now, rp->project->project_name" in patched
    assert "cmp_read_holds(infile_prefix);" in patched
    assert "cmp_flush_usage();\n    fclose(cmp_usage_file);\n    html_end();" in patched


def test_patch_refuses_a_sim_cpp_it_does_not_know() -> None:
    with pytest.raises(BceError, match=r"sim\.cpp has changed"):
        patch_sim_source(SIM_CPP.replace("        rp->project->idle = false;\n", ""))


def test_inputs_hold_a_later_app_until_it_appears(tmp_path: Path) -> None:
    write_inputs(load_scenario("example3_new_gpu_app"), tmp_path)
    assert (tmp_path / "app_hold.txt").read_text() == "b_gpu 31536000\n"


def test_inputs_give_the_gpu_a_peak_that_weighs_its_seconds_as_the_emulator_does(tmp_path: Path) -> None:
    write_inputs(load_scenario("example1_gpu_sharing"), tmp_path)
    state = (tmp_path / "client_state.xml").read_text()
    # 2 GFLOPS actual: BCE counts 20% of the peak in REC.
    assert "<coproc_cuda><count>1</count><peak_flops>1e+10</peak_flops>" in state
    assert "<coproc><type>NVIDIA</type><count>1</count></coproc><flops>2e+09</flops>" in state


def test_inputs_queue_the_year_long_job_under_an_app_never_sent_again(tmp_path: Path) -> None:
    write_inputs(load_scenario("example2_high_priority"), tmp_path)
    state = (tmp_path / "client_state.xml").read_text()
    assert "<report_deadline>31539600</report_deadline>" in state
    assert "a_year 1000000000000" in (tmp_path / "app_hold.txt").read_text()


def test_scaled_example3_gets_its_gpu_app_after_twenty_days() -> None:
    scaled = shorten_year(load_scenario("example3_new_gpu_app"), 20)
    assert (scaled.project("B").apps[0].available_from, scaled.duration) == (20 * DAY, 50 * DAY)


def test_scaled_example2_job_shrinks_with_its_deadline() -> None:
    (job,) = shorten_year(load_scenario("example2_high_priority"), 20).project("A").queued_jobs
    assert (job.deadline, job.fpops) == (20 * DAY, pytest.approx(20 * DAY * 1e9))


def test_windows_start_at_the_change_of_phase() -> None:
    windows = comparison_windows(shorten_year(load_scenario("example3_new_gpu_app"), 20), 20)
    assert [(w.first, w.last) for w in windows] == [(0, 20), (20, 21), (20, 30), (30, 35), (30, 50)]


def test_windows_of_a_scenario_without_phases_start_at_day_zero() -> None:
    windows = comparison_windows(load_scenario("example1_gpu_sharing"), 365)
    assert [(w.first, w.last) for w in windows] == [(0, 1), (0, 10), (10, 15), (10, 30)]


def test_command_refuses_a_directory_that_is_no_boinc_checkout(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not a BOINC source checkout"):
        call_command("compare_bce", "--boinc-src", str(tmp_path), "--work-dir", str(tmp_path / "w"))


def test_comparison_gives_each_sides_mean_and_spread_over_its_seeds() -> None:
    scenario = replace(load_scenario("two_projects_cpu_only"), duration=DAY)
    runs = [DailyUsage({ProcType.CPU: 1}, {(0, "A", ProcType.CPU): secs}) for secs in (DAY, 0.0)]
    row = compare(scenario, runs, runs[:1], year_days=20)[0]
    assert (row.bce, row.bce_spread, row.rec, row.rec_spread) == pytest.approx(
        (0.5, 0.7071, 1.0, 0.0), abs=1e-4
    )
    assert "50.0 ± 70.7" in format_rows([row])


def test_emulator_usage_by_day_gives_the_reports_shares() -> None:
    scenario = load_scenario("example1_gpu_sharing")
    report = run_scenario(scenario, "rec", days=3)
    usage = report_usage(report, replace(scenario, duration=3 * DAY))
    assert usage.share("A", ProcType.NVIDIA, 1, 3) == pytest.approx(
        report.share("A", ProcType.NVIDIA, start=DAY, end=3 * DAY)
    )


def test_inputs_refuse_queued_jobs_of_a_project_attached_later(tmp_path: Path) -> None:
    scenario = load_scenario("example2_high_priority")
    later = replace(scenario, projects=(replace(scenario.projects[0], attach_at=DAY), scenario.projects[1]))
    with pytest.raises(BceError, match="attached later and has queued jobs"):
        write_inputs(later, tmp_path)
