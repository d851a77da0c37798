"""The spread of granted credit per job, for the credit admin (quantiles and a histogram).

An admin checks normalization by looking at what jobs of one app are granted: after
cross-version and host normalization the values should cluster (the design wants every version
to get the same average granted credit), and a long tail shows hosts or versions the
normalization has not caught up with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


@dataclass(frozen=True, slots=True)
class Bin:
    """Values in [lo, hi) (the last bin also holds hi)."""

    lo: float
    hi: float
    count: int


@dataclass(frozen=True, slots=True)
class CreditDistribution:
    n: int
    mean: float
    quantiles: tuple[tuple[float, float], ...]
    bins: tuple[Bin, ...]


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); ``ordered`` is sorted."""
    if not ordered:
        raise ValueError("quantile of no values")
    pos = (len(ordered) - 1) * min(max(q, 0.0), 1.0)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def histogram(ordered: Sequence[float], n_bins: int) -> tuple[Bin, ...]:
    """Equal-width bins from the smallest to the largest value; one bin if they are all equal."""
    if not ordered:
        return ()
    lo, hi = ordered[0], ordered[-1]
    if hi <= lo or n_bins <= 1:
        return (Bin(lo, hi, len(ordered)),)
    width = (hi - lo) / n_bins
    counts = [0] * n_bins
    for value in ordered:
        counts[min(int((value - lo) / width), n_bins - 1)] += 1
    return tuple(Bin(lo + i * width, lo + (i + 1) * width, c) for i, c in enumerate(counts))


def credit_distribution(values: Sequence[float], *, n_bins: int = 20) -> CreditDistribution | None:
    """Quantiles, mean and histogram of finite, non-negative values; None without any."""
    ordered = sorted(v for v in values if math.isfinite(v) and v >= 0)
    if not ordered:
        return None
    return CreditDistribution(
        n=len(ordered),
        mean=math.fsum(ordered) / len(ordered),
        quantiles=tuple((q, quantile(ordered, q)) for q in QUANTILES),
        bins=histogram(ordered, n_bins),
    )
