"""Pure CreditNew math (docs/credit.md): PFC, normalization, claimed and granted credit,
runtime estimates, host punishment and RAC. No Django; every time is a Unix float.

Validator flow for one workunit's valid results (the service loads rows into these
values and writes back what comes out):

1. per valid result: ``host_app_version_on_outcome(hav, JobOutcome.VALID, ...)``
   (is_valid: probation, error rate), then ``claimed_pfc(job, hav=..., ...)``;
2. ``granted_credit(claims, ...)`` once for the workunit; every valid result gets it;
3. ``update_rac`` for host, user, team and app version with the granted credit.

The scheduler calls ``peak_flops``, ``probation_on_send``, ``roll_daily_count``,
``daily_quota_exceeded``, ``count_sent`` and ``estimate_flops``; the main feeder calls
``normalize_app_versions`` every 10 minutes.
"""

from __future__ import annotations

from apps.credit.domain.claim import ClaimBranch, PfcClaim, ValidatedJob, claimed_credit, claimed_pfc
from apps.credit.domain.cross_project import (
    CrossProjectRow,
    PlanClassScale,
    aggregate_plan_class_scales,
    is_gpu_only_app,
)
from apps.credit.domain.grant import Claim, ClaimValue, Grant, GrantBasis, granted_credit, pegged_average
from apps.credit.domain.host_scale import (
    host_scale_factor,
    host_scaling_allowed,
    probation_on_failure,
    probation_on_send,
    probation_on_valid,
)
from apps.credit.domain.normalization import (
    VersionNormalization,
    VersionPfc,
    VersionScale,
    normalize_app_versions,
    reference_pfc,
    sample_median,
    version_pfc_median,
)
from apps.credit.domain.peak import (
    ResourceUsage,
    default_pfc,
    fails_sanity_check,
    peak_flop_count,
    peak_flops,
)
from apps.credit.domain.policy import (
    AVG_CPU_FPOPS,
    BOINC_MAX_GRANTED_CREDIT,
    CONS_VALID_HOST_SCALE,
    DEFAULT_GPU_SCALE,
    HOST_SCALE_MAX,
    SEED_POLICY,
    CreditPolicy,
    Rule,
)
from apps.credit.domain.quota import (
    ERROR_RATE_WEIGHT,
    JobOutcome,
    count_sent,
    daily_quota_exceeded,
    effective_daily_quota,
    host_app_version_on_outcome,
    roll_daily_count,
    update_error_rate,
    update_quota,
)
from apps.credit.domain.rac import CREDIT_HALF_LIFE, decay_rac, update_rac
from apps.credit.domain.runtime import (
    ET_RATIO_LIMIT,
    FlopsEstimate,
    FlopsSource,
    estimate_flops,
    estimated_duration,
)
from apps.credit.domain.stats import ERROR_RATE_INIT, AppVersionStats, HostAppVersionStats

__all__ = [
    "AVG_CPU_FPOPS",
    "BOINC_MAX_GRANTED_CREDIT",
    "CONS_VALID_HOST_SCALE",
    "CREDIT_HALF_LIFE",
    "DEFAULT_GPU_SCALE",
    "ERROR_RATE_INIT",
    "ERROR_RATE_WEIGHT",
    "ET_RATIO_LIMIT",
    "HOST_SCALE_MAX",
    "SEED_POLICY",
    "AppVersionStats",
    "Claim",
    "ClaimBranch",
    "ClaimValue",
    "CreditPolicy",
    "CrossProjectRow",
    "FlopsEstimate",
    "FlopsSource",
    "Grant",
    "GrantBasis",
    "HostAppVersionStats",
    "JobOutcome",
    "PfcClaim",
    "PlanClassScale",
    "ResourceUsage",
    "Rule",
    "ValidatedJob",
    "VersionNormalization",
    "VersionPfc",
    "VersionScale",
    "aggregate_plan_class_scales",
    "claimed_credit",
    "claimed_pfc",
    "count_sent",
    "daily_quota_exceeded",
    "decay_rac",
    "default_pfc",
    "effective_daily_quota",
    "estimate_flops",
    "estimated_duration",
    "fails_sanity_check",
    "granted_credit",
    "host_app_version_on_outcome",
    "host_scale_factor",
    "host_scaling_allowed",
    "is_gpu_only_app",
    "normalize_app_versions",
    "peak_flop_count",
    "peak_flops",
    "pegged_average",
    "probation_on_failure",
    "probation_on_send",
    "probation_on_valid",
    "reference_pfc",
    "roll_daily_count",
    "sample_median",
    "update_error_rate",
    "update_quota",
    "update_rac",
    "version_pfc_median",
]
