"""Granted credit for a job from its valid instances' claims (docs/credit.md).

The design (``Rule.SEED`` for grants): one instance (no replication) gets its claimed credit;
with replication, the mean claimed credit of the non-approximate instances, else the default
(app.min_avg_pfc * fpops_est, or fpops_est, times the cobblestone scale). BOINC's assign_credit_set (the
BOINC grant rule) caps each claim at fpops_bound and takes an average pegged to the
workunit estimate instead. Every valid instance of the job is granted the same credit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from apps.core.domain.resources import COBBLESTONE_SCALE
from apps.credit.domain.peak import default_pfc
from apps.credit.domain.policy import SEED_POLICY, CreditPolicy, Rule


class Claim(Protocol):
    """Anything with the claimed PFC and approx flag of one valid instance (e.g. PfcClaim)."""

    @property
    def pfc(self) -> float: ...

    @property
    def approx(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ClaimValue:
    """A stored claim: result.claimed_credit / COBBLESTONE_SCALE and result.credit_approx."""

    pfc: float
    approx: bool


class GrantBasis(StrEnum):
    CLAIMED = "claimed"  # single instance: its claim
    MEAN = "mean"  # the design: mean of the non-approximate claims
    PEGGED = "pegged"  # BOINC: average pegged to the workunit estimate
    DEFAULT = "default"  # no usable claim: the default (workunit estimate)


@dataclass(frozen=True, slots=True)
class Grant:
    """Credit (Cobblestones) to grant each valid instance, the PFC behind it, and why."""

    credit: float
    pfc: float
    basis: GrantBasis


def _over_cap(pfc: float, policy: CreditPolicy) -> bool:
    # BOINC marks such a claim INVALID: it no longer counts towards the grant.
    return policy.max_granted_credit > 0 and pfc * COBBLESTONE_SCALE > policy.max_granted_credit


def _grant(pfc: float, basis: GrantBasis, policy: CreditPolicy) -> Grant:
    credit = pfc * COBBLESTONE_SCALE
    cap = policy.max_granted_credit
    if cap > 0 and credit > cap:  # the default grant (every claim over the cap) is held to it too
        return Grant(credit=cap, pfc=cap / COBBLESTONE_SCALE, basis=basis)
    return Grant(credit=credit, pfc=pfc, basis=basis)


def pegged_average(values: Sequence[float], anchor: float) -> float:
    """Weighted mean, each value weighted 1 / (0.1*anchor + |anchor - value|).

    Values near the workunit estimate dominate, so one wild claim moves the result little.
    A single value is returned as is; with no positive anchor it is the plain mean.
    """
    if len(values) == 1:
        return values[0]
    if not anchor > 0:
        return sum(v / len(values) for v in values)
    # Weights relative to the anchor lie in (0, 10]; normalizing them before multiplying
    # keeps the sum finite for any finite values.
    weights = [1.0 / (0.1 + abs(1.0 - v / anchor)) for v in values]
    total = sum(weights)
    if not total > 0:  # every value so far off that its weight underflowed
        return sum(v / len(values) for v in values)
    return sum((w / total) * v for w, v in zip(weights, values, strict=True))


def granted_credit(
    claims: Sequence[Claim],
    *,
    fpops_est: float,
    fpops_bound: float,
    min_avg_pfc: float,
    policy: CreditPolicy = SEED_POLICY,
) -> Grant:
    """The credit for every valid instance of a job, from their claims (at least one).

    One claim means no replication: it is granted as claimed. ``min_avg_pfc`` is
    app.min_avg_pfc (0 = undefined), used for the default. With ``max_granted_credit``
    set, claims above it are disregarded and the grant never exceeds it.
    """
    if not claims:
        raise ValueError("granted_credit needs at least one valid claim")
    default = default_pfc(fpops_est, min_avg_pfc)
    if policy.grant_rule is Rule.BOINC:
        return _pegged_grant(claims, default=default, fpops_bound=fpops_bound, policy=policy)
    usable = [c for c in claims if math.isfinite(c.pfc) and c.pfc >= 0 and not _over_cap(c.pfc, policy)]
    if len(claims) == 1:
        if usable:
            return _grant(usable[0].pfc, GrantBasis.CLAIMED, policy)
        return _grant(default, GrantBasis.DEFAULT, policy)
    exact = [c.pfc for c in usable if not c.approx]
    if exact:
        # Divide before adding: two claims near the float maximum must not sum to inf.
        return _grant(sum(x / len(exact) for x in exact), GrantBasis.MEAN, policy)
    return _grant(default, GrantBasis.DEFAULT, policy)


def _pegged_grant(
    claims: Sequence[Claim], *, default: float, fpops_bound: float, policy: CreditPolicy
) -> Grant:
    """BOINC's assign_credit_set: NORMAL claims first, one NORMAL claim counted twice."""
    normal: list[float] = []
    approx: list[float] = []
    for c in claims:
        if not math.isfinite(c.pfc) or c.pfc < 0:
            continue
        pfc = min(c.pfc, fpops_bound) if fpops_bound > 0 else c.pfc
        if _over_cap(pfc, policy):
            continue
        (approx if c.approx else normal).append(pfc)
    if len(normal) >= 2:
        values = normal
    elif len(normal) == 1:
        values = [*approx, normal[0], normal[0]]
    elif approx:
        values = approx
    else:
        return _grant(default, GrantBasis.DEFAULT, policy)
    pegged = pegged_average(values, default)
    if not math.isfinite(pegged):  # weights near 1/0 for a tiny anchor can overflow
        return _grant(default, GrantBasis.DEFAULT, policy)
    return _grant(pegged, GrantBasis.PEGGED, policy)
