"""Cross-project version normalization (docs/credit.md): the central server's aggregation.

Projects export one row per app version (app name, platform, plan class, recent average
granted credit, scale factor). The central server averages the scale factors per plan
class, weighted by recent credit, and projects give that factor S(V) to the versions of
apps that have only GPU versions (``normalize_app_versions(..., cross_project=...)``).
BOINC designed this but never built it; the design is the whole specification.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CrossProjectRow:
    """One exported app version. ``project`` and ``is_gpu`` are added by the collector.

    The collector knows which project a file came from; ``is_gpu`` comes from the
    exporting project, which knows the version's resources. Both are needed to keep only
    apps with CPU and GPU versions (see ``aggregate_plan_class_scales``).
    """

    project: str
    app_name: str
    platform: str
    plan_class: str
    recent_avg_credit: float
    scale_factor: float
    is_gpu: bool


@dataclass(frozen=True, slots=True)
class PlanClassScale:
    """Average scale factor of a plan class, the credit weight behind it and its row count."""

    plan_class: str
    scale: float
    weight: float
    n_versions: int


def _usable(row: CrossProjectRow) -> bool:
    return (
        math.isfinite(row.recent_avg_credit)
        and row.recent_avg_credit > 0
        and math.isfinite(row.scale_factor)
        and row.scale_factor > 0
    )


def aggregate_plan_class_scales(rows: Iterable[CrossProjectRow]) -> tuple[PlanClassScale, ...]:
    """Per plan class, the scale factor averaged over versions weighted by recent credit.

    Only apps (per project and app name) with both a CPU and a GPU version count: the
    design takes the factor among projects that have both CPU and GPU versions, and a
    GPU-only app's own factor may come from this table, which would feed it back into
    itself. Rows without recent credit or with a non-positive scale are ignored.
    Sorted by plan class.
    """
    rows = [r for r in rows if _usable(r)]
    kinds: dict[tuple[str, str], set[bool]] = defaultdict(set)
    for r in rows:
        kinds[(r.project, r.app_name)].add(r.is_gpu)
    credit: dict[str, float] = defaultdict(float)
    weighted: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for r in rows:
        if len(kinds[(r.project, r.app_name)]) < 2:
            continue
        credit[r.plan_class] += r.recent_avg_credit
        weighted[r.plan_class] += r.recent_avg_credit * r.scale_factor
        count[r.plan_class] += 1
    return tuple(
        PlanClassScale(
            plan_class=pc, scale=weighted[pc] / credit[pc], weight=credit[pc], n_versions=count[pc]
        )
        for pc in sorted(credit)
    )


def is_gpu_only_app(version_is_gpu: Sequence[bool]) -> bool:
    """An app with at least one version and no CPU version: the case that uses S(V)."""
    return bool(version_is_gpu) and all(version_is_gpu)
