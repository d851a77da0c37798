"""Cross-project normalization: per-plan-class scale factors weighted by recent credit."""

from __future__ import annotations

from apps.credit.domain import CrossProjectRow, PlanClassScale, aggregate_plan_class_scales, is_gpu_only_app


def row(project, app, plan_class, rac, scale, is_gpu):
    return CrossProjectRow(
        project=project,
        app_name=app,
        platform="x86_64-pc-linux-gnu",
        plan_class=plan_class,
        recent_avg_credit=rac,
        scale_factor=scale,
        is_gpu=is_gpu,
    )


def test_scale_is_averaged_per_plan_class_weighted_by_recent_credit():
    rows = [
        row("a", "x", "", 1000.0, 1.0, False),
        row("a", "x", "cuda", 3000.0, 0.1, True),
        row("b", "y", "", 500.0, 1.0, False),
        row("b", "y", "cuda", 1000.0, 0.3, True),
    ]
    cuda = aggregate_plan_class_scales(rows)[1]
    assert cuda.plan_class == "cuda"
    assert cuda.scale == (3000.0 * 0.1 + 1000.0 * 0.3) / 4000.0
    assert (cuda.weight, cuda.n_versions) == (4000.0, 2)


def test_apps_without_both_cpu_and_gpu_versions_are_left_out():
    rows = [
        row("a", "x", "", 1000.0, 1.0, False),
        row("a", "x", "cuda", 1000.0, 0.1, True),
        row("b", "gpu_only", "cuda", 1e6, 5.0, True),
    ]
    assert aggregate_plan_class_scales(rows)[1].scale == 0.1


def test_same_app_name_in_two_projects_is_two_apps():
    rows = [row("a", "x", "", 10.0, 1.0, False), row("b", "x", "cuda", 10.0, 0.1, True)]
    assert aggregate_plan_class_scales(rows) == ()


def test_rows_without_recent_credit_or_scale_are_ignored():
    rows = [
        row("a", "x", "", 10.0, 1.0, False),
        row("a", "x", "cuda", 10.0, 0.2, True),
        row("a", "x", "cuda_fermi", 0.0, 0.5, True),
        row("a", "x", "opencl", 10.0, 0.0, True),
    ]
    assert aggregate_plan_class_scales(rows) == (
        PlanClassScale(plan_class="", scale=1.0, weight=10.0, n_versions=1),
        PlanClassScale(plan_class="cuda", scale=0.2, weight=10.0, n_versions=1),
    )


def test_gpu_only_app_has_only_gpu_versions():
    assert is_gpu_only_app([True, True]) is True
    assert is_gpu_only_app([True, False]) is False
    assert is_gpu_only_app([]) is False
