"""Plain-text tables of simulation reports, for a management command to print."""

from __future__ import annotations

from collections.abc import Sequence

from apps.emulator.domain.figures import SimulationReport
from apps.emulator.domain.model import DAY


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first column left-aligned, the rest right."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(cells)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def format_report_table(report: SimulationReport) -> str:
    """Per-project shares of each resource, then the figures of merit and counts."""
    header = ["project", *(f"{proc.value} share" for proc in report.resources), "processing"]
    total = sum(report.processing(p) for p in report.projects) or 1.0
    rows = []
    for project in report.projects:
        shares = [f"{report.share(project, proc):.1%}" for proc in report.resources]
        rows.append([project, *shares, f"{report.processing(project) / total:.1%}"])
    rows.append(["(idle)", *(f"{report.idle(proc):.1%}" for proc in report.resources), ""])
    fig = report.figures
    summary = [
        f"Scenario {report.scenario}, policy {report.policy}, {report.duration / DAY:g} simulated days",
        "",
        _table(header, rows),
        "",
        _table(
            ["figure of merit", "value"],
            [
                ["idle fraction", f"{fig.idle_fraction:.4f}"],
                ["wasted fraction", f"{fig.wasted_fraction:.4f}"],
                ["share violation", f"{fig.share_violation:.4f}"],
                ["monotony", f"{fig.monotony:.4f}"],
                ["RPCs per job", f"{fig.rpcs_per_job:.4f}"],
            ],
        ),
        "",
        f"RPCs {report.n_rpcs}, jobs received {report.n_jobs_received}, completed "
        f"{report.n_jobs_completed}, missed deadline {report.n_jobs_missed}, "
        f"aborted unstarted {report.n_jobs_aborted}",
    ]
    return "\n".join(summary)


def format_comparison_table(reports: Sequence[SimulationReport]) -> str:
    """One row per report (e.g. one per policy on the same scenario): shares and figures."""
    if not reports:
        return ""
    first = reports[0]
    pairs = [(p, proc) for p in first.projects for proc in first.resources]
    header = [
        "policy",
        *(f"{p}/{proc.value}" for p, proc in pairs),
        "idle",
        "wasted",
        "share viol.",
        "monotony",
        "RPCs/job",
    ]
    rows = []
    for report in reports:
        fig = report.figures
        rows.append(
            [
                report.policy,
                *(f"{report.share(p, proc):.1%}" for p, proc in pairs),
                f"{fig.idle_fraction:.3f}",
                f"{fig.wasted_fraction:.3f}",
                f"{fig.share_violation:.3f}",
                f"{fig.monotony:.3f}",
                f"{fig.rpcs_per_job:.3f}",
            ]
        )
    return _table(header, rows)


def report_summary(report: SimulationReport) -> dict[str, object]:
    """The report's figures of merit, shares and counts as plain JSON-ready values."""
    fig = report.figures
    return {
        "scenario": report.scenario,
        "policy": report.policy,
        "days": report.duration / DAY,
        "figures": {
            "idle_fraction": fig.idle_fraction,
            "wasted_fraction": fig.wasted_fraction,
            "share_violation": fig.share_violation,
            "monotony": fig.monotony,
            "rpcs_per_job": fig.rpcs_per_job,
        },
        "shares": {
            project: {proc.value: report.share(project, proc) for proc in report.resources}
            for project in report.projects
        },
        "counts": {
            "rpcs": report.n_rpcs,
            "jobs_received": report.n_jobs_received,
            "jobs_completed": report.n_jobs_completed,
            "jobs_missed": report.n_jobs_missed,
            "jobs_aborted": report.n_jobs_aborted,
        },
    }
