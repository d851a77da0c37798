"""Figures in units a reader takes in at a glance: GFLOPS, percentages, BOINC version numbers."""

from __future__ import annotations

import math

from django import template

register = template.Library()


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]  # any value: a bad one is caught
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@register.filter
def gflops(flops: object) -> str:
    """29e12 FLOPS as "29,000 GFLOPS"; one decimal below 100, none above."""
    value = _number(flops)
    if value is None:
        return ""
    g = value / 1e9
    return f"{g:,.0f} GFLOPS" if abs(g) >= 100 else f"{g:,.1f} GFLOPS"


@register.filter
def gflop(fpops: object) -> str:
    """An amount of computing (a job's estimated FLOPs) in GFLOP, as rates are in GFLOPS."""
    text = gflops(fpops)
    return text[:-1] if text else ""


@register.filter
def percent(fraction: object, decimals: int = 1) -> str:
    """A fraction (0.0125) as "1.3 %"."""
    value = _number(fraction)
    if value is None:
        return ""
    return f"{value * 100:.{int(decimals)}f} %"


@register.filter
def boinc_version(version_num: object) -> str:
    """BOINC's version_num (712) as its pages write it ("7.12")."""
    value = _number(version_num)
    if value is None:
        return ""
    number = int(value)
    return f"{number // 100}.{number % 100:02d}"
