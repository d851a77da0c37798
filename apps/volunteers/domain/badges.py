"""Badges by credit level and by percentile of recent average credit, as BOINC's badge_assign.

Each user or team holds at most one badge of each family: the highest it reaches. The
percentile badges go to the top 1%, 5% and 25% of those whose recent average credit is
above 1 (BOINC counts only them); the credit badges to totals from 10,000 up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Highest first: the first one reached is the one held.
PERCENTILES: tuple[int, ...] = (1, 5, 25)
CREDIT_LEVELS: tuple[int, ...] = (100_000_000, 10_000_000, 1_000_000, 100_000, 10_000)
# Only a recent average above this counts towards, or earns, a percentile badge.
MIN_RAC = 1.0


@dataclass(frozen=True, slots=True)
class BadgeSpec:
    """A badge of a family: its name's suffix and its title."""

    name: str
    title: str


def pct_badges() -> tuple[BadgeSpec, ...]:
    return tuple(BadgeSpec(f"pct_{i}", f"Top {p}% in average credit") for i, p in enumerate(PERCENTILES))


def credit_badges() -> tuple[BadgeSpec, ...]:
    return tuple(BadgeSpec(f"credit_{i}", f"{level:,} credits") for i, level in enumerate(CREDIT_LEVELS))


def percentile_thresholds(racs: Sequence[float]) -> tuple[float, ...]:
    """The recent average credit that reaches each percentile of PERCENTILES, from all the
    values (any order). With no value above MIN_RAC, nothing reaches any (infinity)."""
    ranked = sorted((r for r in racs if r > MIN_RAC), reverse=True)
    if not ranked:
        return tuple(math.inf for _ in PERCENTILES)
    return tuple(ranked[max(math.ceil(len(ranked) * p / 100) - 1, 0)] for p in PERCENTILES)


def pct_badge_index(rac: float, thresholds: Sequence[float]) -> int | None:
    """Which percentile badge (an index into PERCENTILES) ``rac`` earns, or None."""
    if rac <= MIN_RAC:
        return None
    return next((i for i, threshold in enumerate(thresholds) if rac >= threshold), None)


def credit_badge_index(total: float) -> int | None:
    """Which credit badge (an index into CREDIT_LEVELS) a total credit earns, or None."""
    return next((i for i, level in enumerate(CREDIT_LEVELS) if total >= level), None)
