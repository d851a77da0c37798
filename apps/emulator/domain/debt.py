"""Debt arithmetic of the debt-based policies (the 4.x client, the 6.x work-fetch design), as pure functions.

Debts are in device instance-seconds of one resource type. Every function returns a new
dict and leaves its inputs alone, so the policies can keep plain dicts as state.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from apps.core.domain.resources import ProcType


def adjust_debts(
    debts: Mapping[str, float],
    *,
    shares: Mapping[str, float],
    used: Mapping[str, float],
    eligible: Collection[str],
    dt: float,
    ninstances: float,
) -> dict[str, float]:
    """The work-fetch design: each debt-eligible project gains what it was owed minus what it got.

    It was owed ``dt * ninstances`` times its share among the eligible projects, and got its
    instance-seconds ``used``. An offset spread over the eligible projects then makes the net
    change zero, so eligible projects do not drift away from the others. Ineligible projects
    keep their debt.
    """
    result = dict(debts)
    members = [p for p in debts if p in eligible]
    total_share = sum(shares[p] for p in members)
    if not members:
        return result
    deltas = {}
    for p in members:
        # Zero total share: nobody is owed anything, but usage still counts against them.
        owed = shares[p] / total_share * ninstances * dt if total_share > 0 else 0.0
        deltas[p] = owed - used.get(p, 0.0)
    offset = -sum(deltas.values()) / len(members)
    for p in members:
        result[p] = debts[p] + deltas[p] + offset
    return result


def normalize_max_zero(debts: Mapping[str, float]) -> dict[str, float]:
    """The work-fetch design: shift all debts so the largest is zero; a newly attached project (debt 0)
    therefore starts level with the most-owed project instead of ahead of or behind it."""
    if not debts:
        return {}
    top = max(debts.values())
    return {p: d - top for p, d in debts.items()}


def update_long_term_debts(
    debts: Mapping[str, float],
    *,
    shares: Mapping[str, float],
    used: Mapping[str, float],
    eligible: Collection[str],
    dt: float,
    ninstances: float,
) -> dict[str, float]:
    """One long-term-debt step of the work-fetch design for one resource type: adjust, then offset."""
    adjusted = adjust_debts(debts, shares=shares, used=used, eligible=eligible, dt=dt, ninstances=ninstances)
    return normalize_max_zero(adjusted)


def update_short_term_debts(
    debts: Mapping[str, float],
    *,
    shares: Mapping[str, float],
    used: Mapping[str, float],
    runnable: Collection[str],
    dt: float,
    ninstances: float,
    max_debt: float,
) -> dict[str, float]:
    """Client 6.6's per-resource short-term debt, which orders jobs on that resource.

    Only projects with runnable jobs for the resource take part; the others are reset to
    zero (as the 4.x client does for its single debt). The runnable projects' debts are then
    shifted to mean zero and clamped to +/- ``max_debt``, as 6.6's ``adjust_debts`` did
    ("normalize so mean is zero"). Unlike a zero-sum offset, the shift re-centres the
    debts whenever the runnable set changes: a project left alone with work drops to zero,
    and one that joins at zero (newly attached, or back with work) starts at the mean
    rather than a day below a project left at the clamp.
    """
    adjusted = adjust_debts(debts, shares=shares, used=used, eligible=runnable, dt=dt, ninstances=ninstances)
    members = [p for p in adjusted if p in runnable]
    mean = sum(adjusted[p] for p in members) / len(members) if members else 0.0
    return {
        p: (min(max(d - mean, -max_debt), max_debt) if p in runnable else 0.0) for p, d in adjusted.items()
    }


def update_v4_debts(
    debts: Mapping[str, float],
    *,
    shares: Mapping[str, float],
    work_done: Mapping[str, float],
    runnable: Collection[str],
) -> dict[str, float]:
    """The 4.x client's ``schedule_cpus`` debt step.

    A project without runnable results has its debt reset to zero and its share left out;
    the others gain their share of all CPU time done this period minus their own CPU time.
    """
    total_work = sum(work_done.values())
    adjusted_total_share = sum(shares[p] for p in debts if p in runnable)
    result = {}
    for p, debt in debts.items():
        if p not in runnable or adjusted_total_share <= 0:
            result[p] = 0.0
        else:
            owed = shares[p] / adjusted_total_share * total_work
            result[p] = debt + owed - work_done.get(p, 0.0)
    return result


def overall_debt(
    project: str,
    debts_by_resource: Mapping[ProcType, Mapping[str, float]],
    relative_speed: Mapping[ProcType, float],
) -> float:
    """The work-fetch design's overall LTD: the per-resource debts weighted by resource speed."""
    return sum(debts.get(project, 0.0) * relative_speed[proc] for proc, debts in debts_by_resource.items())
