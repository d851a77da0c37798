"""Peak FLOPS of a job, its peak FLOP count (PFC) and the sanity check (docs/credit.md).

The scheduler calls ``peak_flops`` when it dispatches a job and stores the value in
result.flops_estimate; the validator multiplies it by the reported elapsed time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from apps.core.domain.resources import ProcType


@dataclass(frozen=True, slots=True)
class ResourceUsage:
    """What one job of an app version uses: CPUs (may be fractional) and GPU instances."""

    avg_ncpus: float
    gpu_type: ProcType | None = None
    gpu_usage: float = 0.0


def _non_negative(x: float) -> float:
    # Client-reported speeds can be garbage; a bad term must not make the peak negative.
    return x if math.isfinite(x) and x > 0 else 0.0


def peak_flops(usage: ResourceUsage, *, p_fpops: float, gpu_peak_flops: float = 0.0) -> float:
    """peak_flops(J) = avg_ncpus * host p_fpops + GPU count * peak FLOPS of one host GPU.

    ``gpu_peak_flops`` is the peak of one instance of ``usage.gpu_type`` on this host;
    it is ignored for CPU-only versions. Negative or non-finite terms count as 0.
    """
    cpu = _non_negative(usage.avg_ncpus) * _non_negative(p_fpops)
    if usage.gpu_type is None:
        return cpu
    return cpu + _non_negative(usage.gpu_usage) * _non_negative(gpu_peak_flops)


def peak_flop_count(elapsed_time: float, peak_flops: float) -> float:
    """PFC(J) = T * peak_flops(J)."""
    return elapsed_time * peak_flops


def default_pfc(fpops_est: float, min_avg_pfc: float) -> float:
    """The design's default PFC D: app.min_avg_pfc * wu.fpops_est if defined, else wu.fpops_est."""
    est = fpops_est if math.isfinite(fpops_est) and fpops_est > 0 else 0.0
    if min_avg_pfc > 0 and math.isfinite(min_avg_pfc):
        d = min_avg_pfc * est
        if math.isfinite(d):
            return d
    return est


def fails_sanity_check(pfc: float, fpops_bound: float) -> bool:
    """True if PFC > wu.fpops_bound; a negative or non-finite PFC fails too.

    A PFC that fails is replaced by the default PFC and kept out of the statistics.
    """
    return not math.isfinite(pfc) or pfc < 0 or pfc > fpops_bound
