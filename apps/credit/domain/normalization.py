"""Cross-version normalization: the main feeder's pass every 10 minutes (docs/credit.md).

From the app versions' pfc averages it derives a reference X, sets each version's
pfc_scale = X / pfc_avg so that all versions grant the same average credit, and sets
app.min_avg_pfc = X. Anonymous-platform records never take part.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apps.core.domain.average import Average
from apps.credit.domain.cross_project import PlanClassScale, is_gpu_only_app
from apps.credit.domain.policy import DEFAULT_GPU_SCALE, SEED_POLICY, CreditPolicy, Rule


@dataclass(frozen=True, slots=True)
class VersionPfc:
    """One app version as the feeder sees it: id, resource kind, plan class, pfc average."""

    app_version_id: int
    is_gpu: bool
    pfc: Average
    plan_class: str = ""


@dataclass(frozen=True, slots=True)
class VersionScale:
    app_version_id: int
    pfc_scale: float


@dataclass(frozen=True, slots=True)
class VersionNormalization:
    """What the feeder writes: app.min_avg_pfc (None = leave as is) and changed pfc_scales.

    Versions not listed in ``scales`` keep their current pfc_scale.
    """

    min_avg_pfc: float | None
    scales: tuple[VersionScale, ...]


UNCHANGED = VersionNormalization(min_avg_pfc=None, scales=())


def sample_median(averages: Iterable[Average], *, lower: bool = False) -> float | None:
    """The median of some averages, each weighted by its ``n``: the value reached at half the
    total weight (counted in increasing order), or the midpoint of the two values either side
    when half the weight falls exactly between them (``lower``: the lower of the two); None if
    there is no weight. Empty, negative and non-finite averages are ignored."""
    usable = sorted((a.avg, a.n) for a in averages if a.n > 0 and math.isfinite(a.avg) and a.avg >= 0)
    total = sum(n for _, n in usable)
    seen = 0.0
    for i, (avg, n) in enumerate(usable):
        seen += n
        if seen * 2 == total and i + 1 < len(usable) and not lower:
            # Half the gap added to the lower value: the plain sum of two averages near the
            # float maximum overflows, and halving each underflows the smallest ones.
            return avg + (usable[i + 1][0] - avg) / 2
        if seen * 2 >= total:
            return avg
    return None


def version_pfc_median(host_pfcs: Iterable[Average], *, policy: CreditPolicy = SEED_POLICY) -> float | None:
    """An app version's pfc average as the median of its hosts' pfc averages, such that one
    host that inflates its claims cannot move it, even among a handful of hosts.

    A median alone is not enough with few hosts: one more host above them moves it up by a
    rank, and among 4 hosts whose efficiencies differ twofold that is a quarter or more of
    everyone's credit. So:

    - each host weighs its number of samples, but at most the host sample threshold: a host
      that returns many jobs counts no more than any other settled host, so a fast cheater
      cannot own the median, while a host with a sample or two counts for little;
    - a host whose average is more than ``policy.version_median_fence`` times above (or
      below) the lower median of all hosts is left out, and the median is taken over the
      others: no honest host's efficiency is that far from its peers', while a host that
      reports a multiple of its elapsed time lands there, on the high side, at once. The
      fence is centred on the lower median because inflated claims only ever lie above: of
      one honest host and one such cheater, the honest one stays.

    None if no host has a usable average.
    """
    weight = max(policy.min_host_samples, 1.0)
    capped = [Average(n=min(a.n, weight), avg=a.avg) for a in host_pfcs]
    centre = sample_median(capped, lower=True)
    fence = policy.version_median_fence
    if centre is None or centre <= 0 or fence <= 1:
        return sample_median(capped)
    return sample_median(a for a in capped if centre / fence <= a.avg <= centre * fence)


def _weighted_avg(versions: Sequence[VersionPfc]) -> float:
    """Average of the versions' pfc averages, weighted by their sample counts."""
    if len(versions) == 1:
        return versions[0].pfc.avg  # exact, so a lone reference version gets pfc_scale 1.0
    n = sum(v.pfc.n for v in versions)
    return sum(v.pfc.n * v.pfc.avg for v in versions) / n


def reference_pfc(
    cpu: Sequence[VersionPfc], gpu: Sequence[VersionPfc], rule: Rule = Rule.SEED
) -> float | None:
    """X from the versions above the sample threshold, split by resource; None if undefined.

    SEED: CPU and GPU (at least one each): min of the two averages; only one kind with at
    least two versions: their average. BOINC (update_av_scales): the same, except that
    GPU versions alone (even one) give the GPU average * DEFAULT_GPU_SCALE.
    "Only CPU or only GPU" is read as among versions above the threshold: a version
    without enough samples says nothing about efficiency.
    """
    if cpu and gpu:
        return min(_weighted_avg(cpu), _weighted_avg(gpu))
    if len(cpu) >= 2:
        return _weighted_avg(cpu)
    if rule is Rule.BOINC:
        return _weighted_avg(gpu) * DEFAULT_GPU_SCALE if gpu else None
    if len(gpu) >= 2:
        return _weighted_avg(gpu)
    return None


def normalize_app_versions(
    versions: Sequence[VersionPfc],
    *,
    policy: CreditPolicy = SEED_POLICY,
    cross_project: Sequence[PlanClassScale] | None = None,
) -> VersionNormalization:
    """New app.min_avg_pfc and pfc_scale values for one app's versions.

    Versions with ids <= 0 (anonymous platform) are ignored. Only versions above
    ``policy.min_version_samples`` with a positive average are scaled. With the design's
    rule and no X, a single version above the threshold sets app.min_avg_pfc to its own
    average and gets pfc_scale 1; BOINC's rule leaves everything unchanged then.
    ``cross_project``: the central server's per-plan-class factors; an app with only GPU
    versions uses them (``_cross_project_scales``).
    """
    real = [v for v in versions if v.app_version_id > 0]
    above = [v for v in real if v.pfc.above(policy.min_version_samples) and v.pfc.avg > 0]
    if cross_project is not None and is_gpu_only_app([v.is_gpu for v in real]):
        factors = {p.plan_class: p.scale for p in cross_project if p.scale > 0}
        if any(v.plan_class in factors for v in real):
            return _cross_project_scales(real, above, factors)
    cpu = [v for v in above if not v.is_gpu]
    gpu = [v for v in above if v.is_gpu]
    x = reference_pfc(cpu, gpu, policy.normalization_rule)
    if x is not None:
        return VersionNormalization(
            min_avg_pfc=x, scales=tuple(VersionScale(v.app_version_id, x / v.pfc.avg) for v in above)
        )
    if policy.normalization_rule is Rule.SEED and len(above) == 1:
        only = above[0]
        return VersionNormalization(
            min_avg_pfc=only.pfc.avg, scales=(VersionScale(only.app_version_id, 1.0),)
        )
    return UNCHANGED


def _cross_project_scales(
    real: Sequence[VersionPfc], above: Sequence[VersionPfc], factors: dict[str, float]
) -> VersionNormalization:
    """A GPU-only app: each version whose plan class has a factor S(V) gets pfc_scale = S(V).

    X is then the sample-weighted average of S(V) * pfc_avg over those versions above the
    threshold; it becomes app.min_avg_pfc, and versions without a factor are scaled to
    it. Without such a version X is undefined: app.min_avg_pfc and the factorless versions
    stay as they are.
    """
    scales = [VersionScale(v.app_version_id, factors[v.plan_class]) for v in real if v.plan_class in factors]
    anchored = [v for v in above if v.plan_class in factors]
    if not anchored:
        return VersionNormalization(min_avg_pfc=None, scales=tuple(scales))
    n = sum(v.pfc.n for v in anchored)
    x = sum(v.pfc.n * v.pfc.avg * factors[v.plan_class] for v in anchored) / n
    scales += [VersionScale(v.app_version_id, x / v.pfc.avg) for v in above if v.plan_class not in factors]
    return VersionNormalization(min_avg_pfc=x, scales=tuple(scales))
