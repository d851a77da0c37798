"""An SVG chart of each project's share of each resource type over time.

One panel per resource type; in each, the projects' shares of the resource's capacity are
stacked per sample interval (the report's buckets), so the white band left on top is idle
time. The output is a self-contained SVG string; text is escaped, nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from apps.emulator.domain.figures import SimulationReport
from apps.emulator.domain.model import DAY

# Colour-blind-safe palette (Okabe-Ito), reused in order when there are more projects.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

_LEFT, _RIGHT, _TOP, _GAP, _LEGEND = 56, 16, 44, 36, 24


def render_share_chart(report: SimulationReport, *, width: int = 800, panel_height: int = 160) -> str:
    """The SVG text of the share-over-time chart for ``report``."""
    npanels = len(report.resources)
    height = _TOP + npanels * (panel_height + _GAP) + _LEGEND
    plot_width = width - _LEFT - _RIGHT
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f"<title>{escape(report.scenario)} ({escape(report.policy)}): share of each resource</title>",
        f'<text x="{_LEFT}" y="16" font-size="13">{escape(report.scenario)} - policy '
        f"{escape(report.policy)}</text>",
    ]
    for j, proc in enumerate(report.resources):
        top = _TOP + j * (panel_height + _GAP)
        parts.extend(_panel(report, j, top, plot_width, panel_height))
        label = f"{proc.value} ({report.ninstances[j]} x {report.resource_flops[j] / 1e9:g} GFLOPS)"
        parts.append(f'<text x="{_LEFT}" y="{top - 4}">{escape(label)}</text>')
    legend_y = height - 8
    for i, project in enumerate(report.projects):
        x = _LEFT + i * 120
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 14}" y="{legend_y}">{escape(project)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _panel(report: SimulationReport, j: int, top: float, plot_width: float, panel_height: float) -> list[str]:
    duration = report.duration or 1.0

    def x_of(t: float) -> float:
        return _LEFT + plot_width * t / duration

    def y_of(share: float) -> float:
        return top + panel_height * (1.0 - share)

    parts = [
        f'<rect x="{_LEFT}" y="{top}" width="{plot_width:.1f}" height="{panel_height}" '
        'fill="none" stroke="#888"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{_LEFT - 6}" y="{y_of(frac) + 4:.1f}" text-anchor="end">{frac:.0%}</text>')
    lower = [0.0] * len(report.buckets)
    for i, project in enumerate(report.projects):
        upper = []
        for k, bucket in enumerate(report.buckets):
            capacity = (bucket.end - bucket.start) * report.ninstances[j]
            share = bucket.used[i][j] / capacity if capacity > 0 else 0.0
            upper.append(min(lower[k] + share, 1.0))
        if any(u > lo for u, lo in zip(upper, lower, strict=True)):
            parts.append(_band(report, upper, lower, x_of, y_of, PALETTE[i % len(PALETTE)], project))
        lower = upper
    days = duration / DAY
    for tick in _ticks(days):
        x = x_of(tick * DAY)
        parts.append(f'<text x="{x:.1f}" y="{top + panel_height + 14}" text-anchor="middle">{tick:g}d</text>')
    return parts


def _band(
    report: SimulationReport,
    upper: Sequence[float],
    lower: Sequence[float],
    x_of: Callable[[float], float],
    y_of: Callable[[float], float],
    colour: str,
    project: str,
) -> str:
    """A step-shaped polygon between two stacked share curves."""
    points = []
    for bucket, u in zip(report.buckets, upper, strict=True):
        points.append((x_of(bucket.start), y_of(u)))
        points.append((x_of(bucket.end), y_of(u)))
    for bucket, lo in zip(reversed(report.buckets), reversed(lower), strict=True):
        points.append((x_of(bucket.end), y_of(lo)))
        points.append((x_of(bucket.start), y_of(lo)))
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return (
        f'<polygon points="{coords}" fill="{colour}" fill-opacity="0.85">'
        f"<title>{escape(project)}</title></polygon>"
    )


def _ticks(days: float) -> list[float]:
    """About six round tick positions (in days) from 0 to ``days``."""
    if days <= 0:
        return [0.0]
    step = 1.0
    for candidate in (0.25, 0.5, 1, 2, 5, 10, 20, 30, 50, 100, 200, 365):
        step = float(candidate)
        if days / step <= 8:
            break
    count = int(days // step)
    return [k * step for k in range(count + 1)]


def render_comparison_chart(
    reports: Sequence[SimulationReport], *, width: int = 800, panel_height: int = 160
) -> str:
    """One SVG with the share chart of each report (e.g. each policy) stacked top to bottom."""
    if len(reports) == 1:
        return render_share_chart(reports[0], width=width, panel_height=panel_height)
    parts = []
    y = 0
    for report in reports:
        height = _TOP + len(report.resources) * (panel_height + _GAP) + _LEGEND
        inner = render_share_chart(report, width=width, panel_height=panel_height)
        # A nested <svg> keeps each chart's own coordinates; only its position changes.
        parts.append(inner.replace("<svg ", f'<svg x="0" y="{y}" ', 1))
        y += height
    title = escape(reports[0].scenario) if reports else ""
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" viewBox="0 0 {width} {y}">',
            f"<title>{title}: share of each resource by policy</title>",
            *parts,
            "</svg>",
        ]
    )
