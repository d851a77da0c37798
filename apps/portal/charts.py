"""A small inline SVG line chart for credit over time (no JavaScript, no library)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from html import escape


def credit_chart_svg(
    points: Sequence[tuple[date, float]], *, width: int = 600, height: int = 180, label: str = "Total credit"
) -> str:
    """An accessible SVG polyline of (day, value); an empty string for fewer than two points."""
    if len(points) < 2:
        return ""
    pad_l, pad_r, pad_t, pad_b = 56, 12, 14, 26
    days = [p[0].toordinal() for p in points]
    values = [max(p[1], 0.0) for p in points]
    d0, d1 = min(days), max(days)
    top = max(values) or 1.0
    span = max(d1 - d0, 1)

    def x(day: int) -> float:
        return pad_l + (width - pad_l - pad_r) * (day - d0) / span

    def y(value: float) -> float:
        return pad_t + (height - pad_t - pad_b) * (1 - value / top)

    coords = " ".join(f"{x(d):.1f},{y(v):.1f}" for d, v in zip(days, values, strict=True))
    first, last = points[0][0].isoformat(), points[-1][0].isoformat()
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(label)} from {first} to {last}" xmlns="http://www.w3.org/2000/svg">'
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" stroke="#9aa5b1"/>'
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" stroke="#9aa5b1"/>'
        f'<text x="{pad_l - 6}" y="{pad_t + 4}" text-anchor="end" font-size="11">{top:,.0f}</text>'
        f'<text x="{pad_l - 6}" y="{height - pad_b}" text-anchor="end" font-size="11">0</text>'
        f'<text x="{pad_l}" y="{height - 8}" font-size="11">{first}</text>'
        f'<text x="{width - pad_r}" y="{height - 8}" text-anchor="end" font-size="11">{last}</text>'
        f'<polyline fill="none" stroke="#2f6db5" stroke-width="2" points="{coords}"/></svg>'
    )
