"""``{{ seconds|duration }}``: a span of seconds in a unit a reader takes in at a glance.

The pages keep BOINC's figures in seconds (turnaround, runtimes). In one fixed unit, a job
of a few seconds reads as 0.00 hours and a week-long one as hundreds of thousands of seconds.
"""

from __future__ import annotations

import math
from itertools import pairwise

from django import template

register = template.Library()

# (unit, its length in seconds, decimals shown), smallest first.
_UNITS = (("s", 1, 1), ("min", 60, 1), ("h", 3600, 2), ("days", 86400, 2))


def duration_text(seconds: object) -> str:
    """The span as "33.6 s", "4.2 min", "9.34 h" or "1.40 days"; empty for no number."""
    try:
        value = float(seconds)  # type: ignore[arg-type]  # any value: a bad one is caught
    except (TypeError, ValueError):
        return ""
    if not math.isfinite(value):
        return ""
    for (unit, size, decimals), (_, next_size, _) in pairwise(_UNITS):
        shown = round(value / size, decimals)
        # Decided on the rounded value, so 59.96 s is "1.0 min", never "60.0 s".
        if abs(shown) * size < next_size:
            return f"{shown:.{decimals}f} {unit}"
    unit, size, decimals = _UNITS[-1]
    return f"{value / size:.{decimals}f} {unit}"


@register.filter
def duration(seconds: object) -> str:
    return duration_text(seconds)
