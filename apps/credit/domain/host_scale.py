"""Host normalization and the scale probation that guards it (docs/credit.md).

Host normalization scales a host's PFC by app_version.pfc_avg / host_app_version.pfc_avg,
capped at 10. Scale probation ("Cherry picking") withholds that factor from a host
until there is evidence it is not discarding its long jobs. Each transition returns a
new HostAppVersionStats; the scheduler calls ``probation_on_send``, the validator
``probation_on_valid``, and result failures go through ``probation_on_failure``.
"""

from __future__ import annotations

from dataclasses import replace

from apps.core.domain.average import Average
from apps.credit.domain.policy import SEED_POLICY, CreditPolicy, Rule
from apps.credit.domain.stats import HostAppVersionStats


def host_scale_factor(av_pfc: Average, hav_pfc: Average, *, policy: CreditPolicy = SEED_POLICY) -> float:
    """app_version.pfc_avg / host_app_version.pfc_avg, capped at ``policy.host_scale_max``.

    0 (no host scaling) unless both averages are above their sample thresholds and the
    host's average is non-zero, as in the design's claimed_pfc.
    """
    if not hav_pfc.above(policy.min_host_samples) or not av_pfc.above(policy.min_version_samples):
        return 0.0
    if hav_pfc.avg <= 0 or av_pfc.avg <= 0:
        return 0.0
    return min(av_pfc.avg / hav_pfc.avg, policy.host_scale_max)


def _time_probation(policy: CreditPolicy) -> bool:
    return policy.host_scale_check and policy.probation_rule is Rule.SEED


def host_scaling_allowed(hav: HostAppVersionStats, *, now: float, policy: CreditPolicy = SEED_POLICY) -> bool:
    """Whether a host scale factor may be used for this host_app_version at ``now``.

    SEED rule: not on scale probation and not before host_scale_time. With the BOINC rule and
    host_scale_check, also at least ``cons_valid_host_scale`` consecutive valid results.
    """
    if hav.scale_probation or now < hav.host_scale_time:
        return False
    if policy.host_scale_check and policy.probation_rule is Rule.BOINC:
        return hav.consecutive_valid >= policy.cons_valid_host_scale
    return True


def probation_on_send(
    hav: HostAppVersionStats, *, delay_bound: float, now: float, policy: CreditPolicy = SEED_POLICY
) -> HostAppVersionStats:
    """Scheduler, per job sent: start the probation clock, host_scale_time = now + delay bound.

    The design sets the clock on every send while on probation. Read literally, a host that
    asks for work more often than once per delay bound would never leave probation, and
    host normalization (the main defence against inflated claims) would be off for every
    busy host. So the clock is set once per probation period: here on the first send
    (host_scale_time still 0), and by ``probation_on_failure`` after an error or timeout.
    Any job the host drops during the period times out and starts a new period.
    """
    if _time_probation(policy) and hav.scale_probation and hav.host_scale_time == 0:
        return replace(hav, host_scale_time=now + delay_bound)
    return hav


def probation_on_valid(
    hav: HostAppVersionStats, *, now: float, unreplicated: bool = False
) -> HostAppVersionStats:
    """Validator, per valid result: leave probation once now > host_scale_time.

    This runs whatever the policy: with probation off host_scale_time stays 0, so the
    first valid result clears the initial probation (and that set by an over-bound claim).
    consecutive_valid counts only replicated results, as BOINC does, since an
    unreplicated result was never compared with anything.
    """
    probation = hav.scale_probation and not now > hav.host_scale_time
    consecutive = hav.consecutive_valid if unreplicated else hav.consecutive_valid + 1
    return replace(hav, scale_probation=probation, consecutive_valid=consecutive)


def probation_on_failure(
    hav: HostAppVersionStats,
    *,
    reference_pfc_avg: float,
    delay_bound: float,
    now: float,
    policy: CreditPolicy = SEED_POLICY,
) -> HostAppVersionStats:
    """A job timed out, errored out, was aborted by the client, or was invalid.

    consecutive_valid restarts at 0 in every case. With the design's probation on, the host
    goes back on probation until now + delay bound and its scale factor is max'd with 1:
    the host's pfc average is raised to at least ``reference_pfc_avg`` (app_version.pfc_avg,
    or app.min_avg_pfc for anonymous platform), so later host scaling cannot exceed 1
    until new samples bring the average back down.
    """
    if not _time_probation(policy):
        return replace(hav, consecutive_valid=0)
    pfc = hav.pfc
    if reference_pfc_avg > pfc.avg:
        pfc = Average(n=pfc.n, avg=reference_pfc_avg)
    return replace(hav, pfc=pfc, scale_probation=True, host_scale_time=now + delay_bound, consecutive_valid=0)
