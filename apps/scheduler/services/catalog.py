"""A per-process cache of each project's apps, app versions (with files) and plan classes.

Every scheduler RPC needs them and they change rarely, so they are read at most once per
TTL per process instead of on every request. Saving or deleting any of them clears this
process's entry at once (signals below); other processes see the change within the TTL.
The cached rows are shared between requests and must be treated as read-only.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.db.models.signals import post_delete, post_save

from apps.applications.models import App, AppFile, AppVersion, PlanClass
from apps.core.db import ModelColumns
from apps.core.domain.resources import ProcType
from apps.news.models import NewsItem, ProjectLinks
from apps.projects.models import Project
from apps.scheduler.queries import project_by_slug as project_row_by_slug
from apps.sequences.models import WorkSequence
from apps.work.models import Assignment
from apps.work.services.assignments import assignments_created

TTL_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class ProjectCatalog:
    apps: dict[int, App]
    versions: tuple[AppVersion, ...]  # non-deprecated, of non-deprecated apps, files prefetched
    # What the scheduler sends: of ``versions``, the highest version_num of each (app,
    # platform, plan class), as BOINC's feeder keeps; older ones only run jobs already sent.
    # This is what users who allow beta work get, beta versions included.
    current_versions: tuple[AppVersion, ...]
    # What the other users get: the same without beta (test) versions, which therefore do
    # not hide the released version, and without any version of a beta app, whose jobs go
    # only to users who allow beta work (BOINC's allow_beta_work).
    released_versions: tuple[AppVersion, ...]
    # The processor types each platform has current versions for: what the project
    # supports, whoever asks (a beta version counts).
    platform_resources: dict[str, frozenset[ProcType]]
    plan_classes: tuple[PlanClass, ...]
    uses_sequences: bool
    # Whether the project has targeted or broadcast jobs: if not, the RPC asks nothing about them.
    has_assignments: bool
    # Whether any news item is to be sent as a notice, and the forum's address for the
    # Manager's links: without notices the reply asks nothing about news.
    has_notices: bool
    forum_url: str
    loaded_at: float
    project_created: datetime


_lock = threading.Lock()
_catalogs: dict[int, ProjectCatalog] = {}


def project_catalog(project: Project) -> ProjectCatalog:
    now = time.monotonic()
    project_id = project.id
    catalog = _catalogs.get(project_id)
    # The creation time guards against a reused id (a deleted project, or a test database).
    if (
        catalog is not None
        and now - catalog.loaded_at < TTL_SECONDS
        and catalog.project_created == project.create_time
    ):
        return catalog
    apps = {a.id: a for a in App.objects.filter(project_id=project_id, deprecated=False)}
    versions = tuple(
        AppVersion.objects.filter(app_id__in=apps, deprecated=False)
        .select_related("platform")
        .prefetch_related("files")
        .order_by("id")
    )
    current = newest_versions(versions)
    catalog = ProjectCatalog(
        apps=apps,
        versions=versions,
        current_versions=current,
        released_versions=newest_versions(tuple(v for v in versions if not (v.beta or apps[v.app_id].beta))),
        platform_resources=_platform_resources(current),
        plan_classes=tuple(PlanClass.objects.filter(project_id=project_id)),
        uses_sequences=WorkSequence.objects.filter(project_id=project_id).exists(),
        has_assignments=Assignment.objects.filter(project_id=project_id).exists(),
        has_notices=NewsItem.objects.filter(project_id=project_id, send_as_notice=True).exists(),
        forum_url=next(
            iter(ProjectLinks.objects.filter(project_id=project_id).values_list("forum_url", flat=True)), ""
        ),
        loaded_at=now,
        project_created=project.create_time,
    )
    with _lock:
        _catalogs[project_id] = catalog
    return catalog


def newest_versions(versions: tuple[AppVersion, ...]) -> tuple[AppVersion, ...]:
    """The versions with the highest version_num of their (app, platform, plan class).

    A release is a new version_num: from then on new jobs go out with it, and hosts
    holding jobs of the older one finish them with the version they have.
    """
    newest: dict[tuple[int, int, str], int] = {}
    for v in versions:
        key = (v.app_id, v.platform_id, v.plan_class)
        newest[key] = max(newest.get(key, v.version_num), v.version_num)
    return tuple(v for v in versions if v.version_num == newest[(v.app_id, v.platform_id, v.plan_class)])


def _platform_resources(versions: tuple[AppVersion, ...]) -> dict[str, frozenset[ProcType]]:
    found: dict[str, set[ProcType]] = {}
    for v in versions:
        found.setdefault(v.platform.name, set()).add(ProcType(v.proc_type))
    return {name: frozenset(types) for name, types in found.items()}


_PROJECT = ModelColumns(Project, "p")


def project_by_slug(slug: str) -> Project | None:
    """The project a scheduler URL names (hand-written SQL: this runs on every RPC)."""
    return project_row_by_slug(slug, _PROJECT)


def catalog_clear(project_id: int | None = None) -> None:
    with _lock:
        if project_id is None:
            _catalogs.clear()
        else:
            _catalogs.pop(project_id, None)


def _clear_for(sender: type, instance: object, **kwargs: object) -> None:
    project_id = getattr(instance, "project_id", None)
    if project_id is None:
        app = getattr(instance, "app", None) or getattr(getattr(instance, "app_version", None), "app", None)
        project_id = getattr(app, "project_id", None)
    catalog_clear(project_id)


def _clear_for_project(sender: type, project_id: int, **kwargs: object) -> None:
    catalog_clear(project_id)


assignments_created.connect(_clear_for_project, dispatch_uid="catalog-assignments-created")

for _model in (App, AppVersion, AppFile, PlanClass, WorkSequence, Assignment, NewsItem, ProjectLinks):
    post_save.connect(_clear_for, sender=_model, dispatch_uid=f"catalog-{_model.__name__}-save")
    post_delete.connect(_clear_for, sender=_model, dispatch_uid=f"catalog-{_model.__name__}-delete")
