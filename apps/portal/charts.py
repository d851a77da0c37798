"""A small line chart of credit over time (no JavaScript, no library).

The line is SVG, stretched to the width of the page; the labels are HTML text around it,
so they keep the page's font size on a phone as on a desktop (SVG text would shrink with
the drawing, to about 6 px on a 390 px screen).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from html import escape

_WIDTH, _HEIGHT = 600, 160


def credit_chart_html(points: Sequence[tuple[date, float]], *, label: str = "Total credit") -> str:
    """A figure of (day, value) as a line; an empty string for fewer than two points."""
    if len(points) < 2:
        return ""
    days = [p[0].toordinal() for p in points]
    values = [max(p[1], 0.0) for p in points]
    d0, d1 = min(days), max(days)
    top = max(values) or 1.0
    span = max(d1 - d0, 1)
    pad = 4  # keeps the 2-pixel line inside the drawing at its extremes

    def x(day: int) -> float:
        return pad + (_WIDTH - 2 * pad) * (day - d0) / span

    def y(value: float) -> float:
        return pad + (_HEIGHT - 2 * pad) * (1 - value / top)

    coords = " ".join(f"{x(d):.1f},{y(v):.1f}" for d, v in zip(days, values, strict=True))
    first, last = points[0][0].isoformat(), points[-1][0].isoformat()
    return (
        f'<figure class="chart" role="img" aria-label="{escape(label)} from {first} to {last}, '
        f'up to {max(values):,.0f}">'
        f'<div class="axis"><span>{top:,.0f}</span></div>'
        f'<svg class="chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" preserveAspectRatio="none" '
        f'height="160" aria-hidden="true" xmlns="http://www.w3.org/2000/svg">'
        f'<line x1="0" y1="{_HEIGHT - 0.5}" x2="{_WIDTH}" y2="{_HEIGHT - 0.5}" stroke="#9aa5b1" '
        f'vector-effect="non-scaling-stroke"/>'
        f'<polyline fill="none" stroke="#2f6db5" stroke-width="2" vector-effect="non-scaling-stroke" '
        f'points="{coords}"/></svg>'
        f'<div class="axis"><span>{first}</span><span>{last}</span></div></figure>'
    )
