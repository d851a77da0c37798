"""Per-app credit options: the CreditNew design by default, BOINC's later choices on request.

BOINC's code departed from the CreditNew design. Each departure that fixes a real problem is
an option here; the defaults are the design's (docs/credit.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from apps.core.domain.average import (
    APP_VERSION_AVERAGE,
    HOST_AVERAGE,
    MIN_HOST_SAMPLES,
    MIN_VERSION_SAMPLES,
    AverageParams,
)


class Rule(StrEnum):
    """Which design a choice follows; the values match the App model's policy choices."""

    SEED = "seed"
    BOINC = "boinc"


# The design's cheat prevention caps the host scaling factor at a constant, about 10.
HOST_SCALE_MAX = 10.0
# BOINC sched_config.h: consecutive valid results before host scaling with host_scale_check.
CONS_VALID_HOST_SCALE = 10
# BOINC credit.h: substituted for a failed CPU benchmark (flops_estimate <= 0 or exactly 1e9).
AVG_CPU_FPOPS = 4.3e9
FAILED_BENCHMARK_FPOPS = 1e9
# Not in the design: host pfc averages this many times above or below the median of a version's
# hosts are left out of its median (CreditPolicy.version_median).
VERSION_MEDIAN_FENCE = 10.0
# BOINC credit.h: the reference when only GPU versions have enough samples.
DEFAULT_GPU_SCALE = 0.1
# BOINC validator: "1 TeraFLOP-year" (200 credits/day * 1000 GFLOPS * 365 days).
BOINC_MAX_GRANTED_CREDIT = 200.0 * 1000 * 365


@dataclass(frozen=True, slots=True)
class CreditPolicy:
    """Options of one app's credit computation. ``CreditPolicy()`` is the CreditNew design as written.

    host_scale_check
        The design's scale probation against cherry picking (app.host_scale_check, default off).
    probation_rule
        With host_scale_check: SEED = host_scale_time (now + delay bound on send while on
        probation, cleared by a validation after it); BOINC = no host scaling until
        ``cons_valid_host_scale`` consecutive valid results.
    grant_rule
        Replicated jobs: SEED = mean of the non-approximate claims, else the default;
        BOINC = assign_credit_set's average pegged to the workunit estimate.
    normalization_rule
        Feeder: SEED = the design's cross-version rule; BOINC = update_av_scales (a single
        CPU version is never scaled, GPU-only apps use the GPU average times 0.1).
    runtime_outlier_check
        BOINC: a peak FLOPS of <= 0 or exactly 1e9 (failed benchmark) is replaced by 4.3e9
        and the result is kept out of every statistic.
    max_granted_credit
        BOINC: claims above this many credits are disregarded and nothing granted exceeds
        it; 0 = no cap (the design). BOINC's validator default is ``BOINC_MAX_GRANTED_CREDIT``.
    host_scale_max, host_average.limit, version_average.limit
        The design's cheat bounds: the host scaling factor's cap (about 10) and the per-sample
        caps X of the host and app-version averages (about 10 for hosts, 100 for app
        versions; BOINC's code caps both at 10). Projects set them (Project.credit_*).
    version_median, version_median_fence
        The feeder sets each app version's pfc average to the median of its hosts' averages,
        the design's remedy for cheating or erroneous hosts moving app_version.pfc_avg,
        so one host that inflates its claims cannot raise the reference X, and with it
        everyone's credit. Among few hosts a median still moves by a whole host's rank, so
        each host counts at most as one settled host, and hosts more than
        ``version_median_fence`` times off the median are left out of it
        (``normalization.version_pfc_median``).
    claim_cap
        Not in the design: a claim that host normalization does not correct yet (the host's
        first jobs, or while on probation) is capped at this many times its version's typical
        job (the version's pfc average times pfc_scale times fpops_est); 0 = no cap. It bounds
        what a host that inflates its elapsed time gains before its own average catches it out.
    """

    host_scale_check: bool = False
    probation_rule: Rule = Rule.SEED
    grant_rule: Rule = Rule.SEED
    normalization_rule: Rule = Rule.SEED
    runtime_outlier_check: bool = False
    max_granted_credit: float = 0.0
    host_scale_max: float = HOST_SCALE_MAX
    cons_valid_host_scale: int = CONS_VALID_HOST_SCALE
    min_host_samples: float = MIN_HOST_SAMPLES
    min_version_samples: float = MIN_VERSION_SAMPLES
    host_average: AverageParams = HOST_AVERAGE
    version_average: AverageParams = APP_VERSION_AVERAGE
    version_median: bool = False
    version_median_fence: float = VERSION_MEDIAN_FENCE
    claim_cap: float = 0.0

    @classmethod
    def boinc(cls, *, host_scale_check: bool = False) -> CreditPolicy:
        """Every choice as BOINC's current server code makes it."""
        return cls(
            host_scale_check=host_scale_check,
            probation_rule=Rule.BOINC,
            grant_rule=Rule.BOINC,
            normalization_rule=Rule.BOINC,
            runtime_outlier_check=True,
            max_granted_credit=BOINC_MAX_GRANTED_CREDIT,
        )


SEED_POLICY = CreditPolicy()
