"""Runtime estimation (CreditNew's plan functions, docs/credit.md; BOINC's sched_version estimate_flops).

The plan function gives the peak FLOPS of the devices a version uses. The scheduler
corrects it with the elapsed-time statistics to the flops estimate it sends the client
(app_version flops), from which the client estimates job durations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from apps.core.domain.average import MIN_HOST_SAMPLES, MIN_VERSION_SAMPLES, Average, AverageVar

# BOINC's ET_RATIO_LIMIT: a statistics-based estimate may not exceed 250x the peak.
ET_RATIO_LIMIT = 250.0


class FlopsSource(StrEnum):
    HOST_ET = "host_et"  # 1 / host_app_version.et_avg
    HOST_PFC = "host_pfc"  # peak / host_app_version.pfc_avg (BOINC estimate_flops_from_hav_pfc)
    VERSION_PFC = "version_pfc"  # peak / app_version.pfc_avg
    PEAK = "peak"  # no statistics yet: the plan function's value


@dataclass(frozen=True, slots=True)
class FlopsEstimate:
    """The projected FLOPS to send for a (host, app version), and where it came from."""

    flops: float
    source: FlopsSource


def _usable(avg: Average | AverageVar | None, threshold: float) -> bool:
    # Strictly more samples than the threshold: the design says "above", as BOINC's own
    # estimate_flops (et.n > MIN_HOST_SAMPLES, pfc.n > MIN_VERSION_SAMPLES). Credit's host
    # scaling counts n >= threshold, as BOINC's credit code does.
    return avg is not None and avg.n > threshold and math.isfinite(avg.avg) and avg.avg > 0


def estimate_flops(
    *,
    peak_flops: float,
    hav_et: AverageVar | None,
    hav_pfc: Average | None = None,
    av_pfc: Average | None = None,
    from_hav_pfc: bool = False,
    no_stats: bool = False,
    min_host_samples: float = MIN_HOST_SAMPLES,
    min_version_samples: float = MIN_VERSION_SAMPLES,
) -> FlopsEstimate:
    """Projected FLOPS of a job of this version on this host.

    et averages elapsed/fpops_est, so 1/et_avg is the host's speed in fpops_est units per
    second; pfc averages peak*elapsed/fpops_est, so peak/pfc_avg is the same speed seen
    through the peak. Host statistics win once above the threshold; the version's pfc
    stands in until then (None for anonymous platform); else the peak itself.
    ``from_hav_pfc``/``no_stats`` are BOINC's estimate_flops_from_hav_pfc and rte_no_stats.
    The result never exceeds ET_RATIO_LIMIT * peak, so a few absurdly short elapsed times
    cannot make the client abort jobs for exceeding their time limit.
    """
    peak = peak_flops if math.isfinite(peak_flops) and peak_flops > 0 else 0.0
    if no_stats:
        return FlopsEstimate(peak, FlopsSource.PEAK)
    if from_hav_pfc and hav_pfc is not None and _usable(hav_pfc, min_host_samples):
        flops, source = peak / hav_pfc.avg, FlopsSource.HOST_PFC
    elif not from_hav_pfc and hav_et is not None and _usable(hav_et, min_host_samples):
        flops, source = 1.0 / hav_et.avg, FlopsSource.HOST_ET
    elif av_pfc is not None and _usable(av_pfc, min_version_samples):
        flops, source = peak / av_pfc.avg, FlopsSource.VERSION_PFC
    else:
        return FlopsEstimate(peak, FlopsSource.PEAK)
    if peak > 0:
        flops = min(flops, ET_RATIO_LIMIT * peak)
    return FlopsEstimate(flops, source)


def estimated_duration(*, fpops_est: float, projected_flops: float, available_frac: float) -> float:
    """Wall-clock seconds the job should take: fpops_est / projected_flops / available_frac.

    ``available_frac`` is the fraction of time the host computes for this resource
    (on_frac * active_frac, or the GPU's); a value outside (0, 1] is treated as 1 since
    it means the client sent nothing usable. A host without a speed estimate gets inf.
    """
    frac = available_frac if 0 < available_frac <= 1 else 1.0
    if not (projected_flops > 0 and math.isfinite(projected_flops)):
        return math.inf
    return max(fpops_est, 0.0) / projected_flops / frac
