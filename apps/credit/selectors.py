"""Reads for cross-project normalization and the credit admin."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from apps.applications.models import App, AppVersion
from apps.core.domain.resources import ProcType
from apps.credit.domain.cross_project import is_gpu_only_app
from apps.credit.domain.distribution import CreditDistribution, credit_distribution
from apps.credit.models import PlanClassScale
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.protocol.scales_xml import AppVersionScale, ScalesExport

RECENT_RESULTS = 1000


def _current_versions() -> QuerySet[AppVersion]:
    """Versions that still get work: neither they nor their app are deprecated."""
    return AppVersion.objects.filter(deprecated=False, app__deprecated=False)


def _scale_rows(versions: Iterable[AppVersion]) -> tuple[AppVersionScale, ...]:
    return tuple(
        AppVersionScale(
            project=v.app.project.master_url,
            app_name=v.app.name,
            platform=v.platform.name,
            plan_class=v.plan_class,
            version_num=v.version_num,
            recent_avg_credit=v.expavg_credit,
            scale_factor=v.pfc_scale,
            is_gpu=v.is_gpu,
        )
        for v in versions
    )


def app_version_scales_export(*, project: Project, now: datetime) -> ScalesExport:
    """The project's export for cross-project normalization (one row per current version).

    The project is named by its master URL, which stays unique across portals, so a
    collector that reads several portals never merges two projects that share a slug.
    """
    versions = (
        _current_versions()
        .filter(app__project=project)
        .select_related("app__project", "platform")
        .order_by("app__name", "platform__name", "plan_class", "version_num")
    )
    return ScalesExport(
        project=project.master_url, update_time=int(now.timestamp()), rows=_scale_rows(versions)
    )


def app_version_scales_local() -> tuple[AppVersionScale, ...]:
    """The rows every project of this portal exports, read straight from the database."""
    versions = _current_versions().select_related("app__project", "platform").order_by("id")
    return _scale_rows(versions)


def gpu_only_app_ids(*, project_ids: Iterable[int]) -> list[int]:
    """Apps whose current versions all use a GPU: the ones cross-project normalization gives S(V)."""
    kinds: dict[int, list[bool]] = {}
    rows = (
        _current_versions().filter(app__project_id__in=list(project_ids)).values_list("app_id", "proc_type")
    )
    for app_id, proc_type in rows:
        kinds.setdefault(app_id, []).append(proc_type != ProcType.CPU.value)
    return sorted(app_id for app_id, is_gpu in kinds.items() if is_gpu_only_app(is_gpu))


@dataclass(frozen=True, slots=True)
class VersionCredit:
    """One version's row in the credit admin, with the cross-project factor of its plan class."""

    version: AppVersion
    cross_project_scale: float | None


@dataclass(frozen=True, slots=True)
class AppCreditOverview:
    """What the credit admin shows for one app."""

    app: App
    versions: tuple[VersionCredit, ...]
    gpu_only: bool
    host_app_versions: int
    on_probation: int
    distribution: CreditDistribution | None


def recent_granted_credit(*, app: App, limit: int = RECENT_RESULTS) -> list[float]:
    """Granted credit of the app's latest credited results, newest first.

    Results are work's rows, reached through the reverse relation App.results so that
    credit keeps not importing work. Only valid results are granted credit, so
    ``granted_credit > 0`` selects them without work's state codes.
    """
    recent = app.results.filter(granted_credit__gt=0).order_by("-id")
    return [float(c) for c in recent.values_list("granted_credit", flat=True)[:limit]]


def app_credit_overview(*, app: App) -> AppCreditOverview:
    versions = list(
        AppVersion.objects.filter(app=app).select_related("platform").order_by("deprecated", "platform", "id")
    )
    factors = dict(PlanClassScale.objects.values_list("plan_class", "scale"))
    current = [v for v in versions if not v.deprecated]
    havs = HostAppVersion.objects.filter(app=app)
    return AppCreditOverview(
        app=app,
        versions=tuple(VersionCredit(v, factors.get(v.plan_class)) for v in versions),
        gpu_only=is_gpu_only_app([v.is_gpu for v in current]),
        host_app_versions=havs.count(),
        on_probation=havs.filter(scale_probation=True).count(),
        distribution=credit_distribution(recent_granted_credit(app=app)),
    )
