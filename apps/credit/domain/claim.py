"""claimed_pfc: the CreditNew design's algorithm for one validated job (docs/credit.md).

It returns the claimed PFC F, the ``approx`` flag and the statistics the algorithm
updates (host_app_version pfc/et/turnaround, app_version pfc, probation and error rate)
as new values; nothing is mutated. The validator service writes them back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum

from apps.core.domain.average import Average
from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.domain.host_scale import host_scale_factor, host_scaling_allowed
from apps.credit.domain.peak import default_pfc, fails_sanity_check, peak_flop_count
from apps.credit.domain.policy import AVG_CPU_FPOPS, FAILED_BENCHMARK_FPOPS, SEED_POLICY, CreditPolicy
from apps.credit.domain.stats import ERROR_RATE_INIT, AppVersionStats, HostAppVersionStats


@dataclass(frozen=True, slots=True)
class ValidatedJob:
    """What the validator knows about one valid result.

    app_version_id is result.app_version_id: > 0 a real version, -2..-6 anonymous platform
    (ProcType.anonymous_app_version_id), 0 no app version info (old scheduler).
    peak_flops is result.flops_estimate, captured at dispatch by ``peak_flops``.
    sent_time/received_time are Unix times; their difference is the turnaround.
    """

    app_version_id: int
    fpops_est: float
    fpops_bound: float
    elapsed_time: float
    peak_flops: float
    sent_time: float
    received_time: float

    @property
    def anonymous(self) -> bool:
        return self.app_version_id < 0


class ClaimBranch(StrEnum):
    """Which branch of the design's claimed_pfc produced F (for logs and admin display)."""

    NO_VERSION_INFO = "no_version_info"
    OVER_BOUND = "over_bound"
    ANONYMOUS = "anonymous"
    NORMAL = "normal"


@dataclass(frozen=True, slots=True)
class PfcClaim:
    """The outcome of ``claimed_pfc``.

    pfc              F, the claimed PFC (finite, >= 0)
    approx           True if F may not be comparable with other instances of the job
    host_app_version the host_app_version with its statistics/probation/error rate updated
    app_version_pfc  app_version.pfc with this job's sample added; None if not updated
    av_pfc_sample    the sample added to app_version.pfc (PFC/fpops_est), for the
                     validator's buffered end-of-pass write; None if none
    runtime_outlier  BOINC option: the peak FLOPS was a failed benchmark's, stats skipped
    branch           which branch of the algorithm decided F
    """

    pfc: float
    approx: bool
    host_app_version: HostAppVersionStats
    app_version_pfc: Average | None
    av_pfc_sample: float | None
    runtime_outlier: bool
    branch: ClaimBranch

    @property
    def claimed_credit(self) -> float:
        return claimed_credit(self.pfc)


def claimed_credit(pfc: float) -> float:
    """C = F * cobblestone_scale (200/86400e9)."""
    return pfc * COBBLESTONE_SCALE


def _safe(f: float, fallback: float) -> float:
    # Scale factors come from stored averages; a corrupt one must not yield a NaN credit.
    return f if math.isfinite(f) and f >= 0 else fallback


def _record_host_stats(
    hav: HostAppVersionStats, job: ValidatedJob, sample: float | None, policy: CreditPolicy
) -> HostAppVersionStats:
    """host_app_version.pfc/et/turnaround updates at the end of the design's algorithm."""
    params = policy.host_average
    pfc, et = hav.pfc, hav.et
    if sample is not None:
        pfc, _ = pfc.update(sample, params)
        et, _ = et.update(job.elapsed_time / job.fpops_est, params)
    turnaround, _ = hav.turnaround.update(job.received_time - job.sent_time, params)
    return replace(hav, pfc=pfc, et=et, turnaround=turnaround)


def _claim(
    f: float,
    approx: bool,
    hav: HostAppVersionStats,
    branch: ClaimBranch,
    default: float,
    outlier: bool = False,
) -> PfcClaim:
    return PfcClaim(
        pfc=_safe(f, default),
        approx=approx,
        host_app_version=hav,
        app_version_pfc=None,
        av_pfc_sample=None,
        runtime_outlier=outlier,
        branch=branch,
    )


def claimed_pfc(
    job: ValidatedJob,
    *,
    hav: HostAppVersionStats,
    app_version: AppVersionStats | None,
    min_avg_pfc: float,
    now: float,
    policy: CreditPolicy = SEED_POLICY,
) -> PfcClaim:
    """The design's claimed_pfc(J): F, approx, and the statistics it updates.

    ``hav`` is the job's host_app_version (for anonymous platform, the record of its app
    and resource type); ``app_version`` is None for anonymous platform. ``min_avg_pfc``
    is app.min_avg_pfc (0 = not defined). ``now`` is the validation time. Apply
    ``host_app_version_on_outcome(hav, JobOutcome.VALID, ...)`` first and pass its result:
    the validator decides validity (is_valid) before it computes credit (handle_wu).
    """
    peak, outlier = job.peak_flops, False
    if policy.runtime_outlier_check and (peak <= 0 or peak == FAILED_BENCHMARK_FPOPS):
        peak, outlier = AVG_CPU_FPOPS, True
    pfc = peak_flop_count(job.elapsed_time, peak)
    default = default_pfc(job.fpops_est, min_avg_pfc)
    fpops_est = default_pfc(job.fpops_est, 0.0)

    if job.app_version_id == 0 or (not job.anonymous and app_version is None):
        return _claim(fpops_est, True, hav, ClaimBranch.NO_VERSION_INFO, fpops_est, outlier)

    if fails_sanity_check(pfc, job.fpops_bound):
        # A one-time cheat or a broken host: default credit, no statistics, and suspicion:
        # back on probation, and "replicate for a while". A probation clock that has run
        # out is cleared, so the next send starts a new period (a running one is kept).
        clock = hav.host_scale_time if hav.host_scale_time > now else 0.0
        suspect = replace(hav, scale_probation=True, host_scale_time=clock, error_rate=ERROR_RATE_INIT)
        return _claim(default, True, suspect, ClaimBranch.OVER_BOUND, default, outlier)

    scaling = host_scaling_allowed(hav, now=now, policy=policy)
    # Runtime outliers (BOINC option) are kept out of every statistic.
    sample = None if outlier or fpops_est <= 0 else pfc / fpops_est
    new_hav = hav if outlier else _record_host_stats(hav, job, sample, policy)

    if job.anonymous:
        f, approx = _anonymous_pfc(
            pfc, hav, min_avg_pfc=min_avg_pfc, default=default, scaling=scaling, policy=policy
        )
        return _claim(f, approx, new_hav, ClaimBranch.ANONYMOUS, default, outlier)

    if app_version is None:  # unreachable: handled as "no app version info" above
        raise ValueError("app_version is required for a non-anonymous job")
    f, approx = _normal_pfc(pfc, hav, app_version, scaling=scaling, policy=policy, fpops_est=fpops_est)
    new_av_pfc = None if sample is None else _version_pfc(app_version.pfc, sample, policy)
    return PfcClaim(
        pfc=_safe(f, default),
        approx=approx,
        host_app_version=new_hav,
        app_version_pfc=new_av_pfc,
        av_pfc_sample=sample,
        runtime_outlier=outlier,
        branch=ClaimBranch.NORMAL,
    )


def _version_pfc(pfc: Average, sample: float, policy: CreditPolicy) -> Average:
    """app_version.pfc with the job's sample. With ``policy.version_median``, once the version
    is above its sample threshold (its average scales everyone's credit), the average is the
    feeder's median of host averages and the sample is only counted: each sample would move it
    until the next pass, so one host returning many inflated jobs (each up to the sample cap)
    would raise everyone's credit meanwhile. Below the threshold the running average gives
    the version a value between the feeder's passes."""
    updated, _ = pfc.update(sample, policy.version_average)
    if policy.version_median and pfc.above(policy.min_version_samples):
        return Average(n=updated.n, avg=pfc.avg)
    return updated


def _anonymous_pfc(
    pfc: float,
    hav: HostAppVersionStats,
    *,
    min_avg_pfc: float,
    default: float,
    scaling: bool,
    policy: CreditPolicy,
) -> tuple[float, bool]:
    """Anonymous platform: normalize by app.min_avg_pfc / host_app_version.pfc_avg.

    ``default`` is app.min_avg_pfc * fpops_est, or fpops_est when min_avg_pfc is undefined.
    The factor is a host scaling factor, so the design's cheat-prevention cap on
    host scaling factors applies; BOINC's code leaves it uncapped.
    """
    if min_avg_pfc <= 0:
        return default, True
    if scaling and hav.pfc.above(policy.min_host_samples) and hav.pfc.avg > 0:
        return pfc * min(min_avg_pfc / hav.pfc.avg, policy.host_scale_max), False
    return default, True


def _normal_pfc(
    pfc: float,
    hav: HostAppVersionStats,
    app_version: AppVersionStats,
    *,
    scaling: bool,
    policy: CreditPolicy,
    fpops_est: float = 0.0,
) -> tuple[float, bool]:
    """F = PFC * pfc_scale * host_scale; exact (not approx) only when both factors apply.

    Without host normalization F is capped at ``policy.claim_cap`` times the version's typical
    job, its average PFC (scaled like F) for ``fpops_est`` FLOPs."""
    host_scale = host_scale_factor(app_version.pfc, hav.pfc, policy=policy) if scaling else 0.0
    f, approx = pfc, True
    if app_version.pfc_scale > 0:
        f *= app_version.pfc_scale
        if host_scale:
            f *= host_scale
            approx = False
    elif host_scale:
        f *= host_scale
    typical = app_version.pfc.avg * (app_version.pfc_scale or 1.0) * fpops_est
    if not host_scale and policy.claim_cap > 0 and typical > 0:
        f = min(f, policy.claim_cap * typical)
    return f, approx
