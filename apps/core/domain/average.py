"""The running average of CreditNew's design (docs/credit.md).

For the first ``n_threshold`` samples the average is the straight mean; after that it
is an exponentially weighted average with weight ``weight`` (the design's A). Samples
after the first are capped at ``limit`` times the current average (the design's X), so a
single absurd sample cannot drag the average far. ``n`` counts samples so callers can
refuse to use an average below its sample threshold.

Differences from BOINC's lib/average.h, both deliberate:

* The design takes the straight mean of the first N samples; BOINC switches
  to the exponential form at the N-th sample (``n < threshold``). Here the N-th sample
  is still part of the straight mean.
* BOINC rejects only negative samples. NaN and infinities are rejected too: one infinite
  first sample would otherwise make the average infinite for good.

BOINC keeps ``n`` as a double (lib/average.h); so does this type, for parity with its exports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AverageParams:
    """N (straight-mean samples), A (exponential weight), X (sample cap) of the design."""

    n_threshold: float
    weight: float
    limit: float


# The design's values: N=100 and A=.001 for app versions, N=10 and A=.01 for hosts; caps X
# of about 10 for hosts and 100 for app versions.
HOST_AVERAGE = AverageParams(n_threshold=10, weight=0.01, limit=10)
APP_VERSION_AVERAGE = AverageParams(n_threshold=100, weight=0.001, limit=100)

# Sample thresholds below which an average is not used (the design's, and BOINC's credit.h).
MIN_HOST_SAMPLES = 10
MIN_VERSION_SAMPLES = 100


def _admit(sample: float, n: float, avg: float, limit: float) -> tuple[float | None, bool]:
    """The sample to use (None if rejected) and whether it was capped or rejected."""
    if not math.isfinite(sample) or sample < 0:
        return None, True
    if n > 0 and avg > 0 and sample > avg * limit:
        return avg * limit, True
    return sample, False


@dataclass(frozen=True, slots=True)
class Average:
    """A running average; ``update`` returns a new value and whether the sample was capped.

    A rejected sample (negative, NaN, infinite) leaves the value unchanged and reports
    ``True``, as BOINC's ``AVERAGE::update`` does for negative samples.
    """

    n: float = 0.0
    avg: float = 0.0

    def update(self, sample: float, params: AverageParams) -> tuple[Average, bool]:
        used, truncated = _admit(sample, self.n, self.avg, params.limit)
        if used is None:
            return self, truncated
        n = self.n + 1
        delta = used - self.avg
        # Straight mean for the first n_threshold samples, exponential after.
        avg = self.avg + delta / n if n <= params.n_threshold else self.avg + params.weight * delta
        return Average(n=n, avg=avg), truncated

    def above(self, threshold: float) -> bool:
        """True when the average has enough samples to be trusted (``n >= threshold``)."""
        return self.n >= threshold


@dataclass(frozen=True, slots=True)
class AverageVar:
    """An Average that also tracks the variance (BOINC's AVERAGE_VAR)."""

    n: float = 0.0
    avg: float = 0.0
    var: float = 0.0
    q: float = 0.0

    def update(self, sample: float, params: AverageParams) -> tuple[AverageVar, bool]:
        used, truncated = _admit(sample, self.n, self.avg, params.limit)
        if used is None:
            return self, truncated
        n = self.n + 1
        delta = used - self.avg
        if n <= params.n_threshold:
            # Welford's running variance while the mean is still a straight mean.
            avg = self.avg + delta / n
            q = self.q + delta * (used - avg)
            var = q / n
        else:
            # Exponentially weighted variance (Finch, "Incremental calculation of
            # weighted mean and variance", 2009), matching the exponential mean.
            q = self.q
            avg = self.avg + params.weight * delta
            var = (1 - params.weight) * (self.var + params.weight * delta * delta)
        return AverageVar(n=n, avg=avg, var=var, q=q), truncated

    def above(self, threshold: float) -> bool:
        """True when the average has enough samples to be trusted (``n >= threshold``)."""
        return self.n >= threshold
