"""Cross-project version normalization (docs/credit.md): collect, aggregate, apply.

In CreditNew's design an app with only GPU versions has no CPU version to compare with, so its
versions are scaled by S(V), the average scaling factor for that resource type among projects
that have both CPU and GPU versions, collected from several projects and averaged per plan
class weighted by recent average credit. BOINC never built it. Here the portal is the central
server for its own projects and for any external exports configured as ScaleSource rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from http.client import HTTPException
from urllib.error import URLError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

from django.db import transaction

from apps.credit.domain.cross_project import CrossProjectRow, aggregate_plan_class_scales
from apps.credit.domain.cross_project import PlanClassScale as PlanClassScaleValue
from apps.credit.models import PlanClassScale, ScaleSource
from apps.credit.selectors import app_version_scales_local, gpu_only_app_ids
from apps.credit.services import credit_normalize_app
from apps.projects.services import DaemonPass, daemon_lock, projects_active_for
from apps.protocol.errors import ProtocolError
from apps.protocol.scales_xml import MAX_EXPORT_BYTES, AppVersionScale, parse_scales

logger = logging.getLogger(__name__)

DAEMON = "cross_project"
FETCH_TIMEOUT = 20.0
USER_AGENT = "Cobblestone cross-project normalization"

Fetch = Callable[[str], bytes]


class ScaleFetchError(Exception):
    """An external export could not be read; the message goes to ScaleSource.last_error."""


def fetch_export(url: str, *, timeout: float = FETCH_TIMEOUT, max_bytes: int = MAX_EXPORT_BYTES) -> bytes:
    """GET an external export (http or https only); every socket operation times out after
    ``timeout`` seconds, and a body over ``max_bytes`` is refused."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ScaleFetchError(f"not an http(s) URL: {url}")
    request = Request(url, headers={"User-Agent": USER_AGENT, "Accept": "application/json, text/xml"})
    try:
        with urlopen(request, timeout=timeout) as response:
            body: bytes = response.read(max_bytes + 1)
    except (URLError, OSError, HTTPException, ValueError) as exc:
        raise ScaleFetchError(f"{type(exc).__name__}: {exc}") from None
    if len(body) > max_bytes:
        raise ScaleFetchError(f"export larger than {max_bytes} bytes")
    return body


def _attributed(rows: Iterable[AppVersionScale], project: str) -> list[AppVersionScale]:
    """Rows without a project of their own belong to the export they came from."""
    return [r if r.project else replace(r, project=project) for r in rows]


def _cross_rows(rows: Iterable[AppVersionScale]) -> list[CrossProjectRow]:
    """One domain row per app version; a version exported twice (a source that exports one
    of this portal's own projects, or two sources exporting the same project) counts once."""
    seen: set[tuple[str, str, str, str, int]] = set()
    kept = []
    for r in rows:
        key = (r.project, r.app_name, r.platform, r.plan_class, r.version_num)
        if key in seen:
            continue
        seen.add(key)
        kept.append(
            CrossProjectRow(
                project=r.project,
                app_name=r.app_name,
                platform=r.platform,
                plan_class=r.plan_class,
                recent_avg_credit=r.recent_avg_credit,
                scale_factor=r.scale_factor,
                is_gpu=r.is_gpu,
            )
        )
    return kept


def scale_source_read(*, source: ScaleSource, now: datetime, fetch: Fetch) -> list[AppVersionScale] | None:
    """Fetch and parse one external export; record the attempt on the source.

    last_fetch is the time of the latest attempt and last_error is empty when it worked, so
    the admin list shows at a glance which sources are stale. Rows without a project of
    their own belong to the export's project, else to the source URL. None when the
    source failed.
    """
    rows: list[AppVersionScale] | None
    try:
        export = parse_scales(fetch(source.url))
        rows = _attributed(export.rows, export.project or source.url)
        error = ""
    except (ScaleFetchError, ProtocolError) as exc:
        rows, error = None, str(exc)[:2000]
        logger.warning("cross-project source %s: %s", source.url, error)
    ScaleSource.objects.filter(pk=source.pk).update(last_fetch=now, last_error=error)
    return rows


@dataclass(frozen=True, slots=True)
class CrossProjectOutcome:
    """One pass: rows read, sources that worked or failed, factors stored, apps normalized."""

    rows: int
    sources_ok: int
    sources_failed: int
    plan_classes: tuple[PlanClassScaleValue, ...]
    normalized: tuple[tuple[int, int], ...]  # (app id, rows changed) per GPU-only app

    def daemon_pass(self) -> DaemonPass:
        changed = sum(n for _, n in self.normalized)
        return DaemonPass(
            items=len(self.plan_classes) + changed,
            errors=self.sources_failed,
            message=(
                f"{self.rows} rows, {self.sources_ok} sources ok, {self.sources_failed} failed; "
                f"{len(self.plan_classes)} plan classes; {len(self.normalized)} GPU-only apps, "
                f"{changed} rows changed"
            ),
        )


def plan_class_scales_store(
    *, scales: Iterable[PlanClassScaleValue], now: datetime, keep_missing: bool
) -> int:
    """Write the factors; returns the rows written.

    A plan class without a factor this time is deleted, unless ``keep_missing`` (a source
    failed): then its last factor stays, so a source that is down for a day does not flip
    its GPU-only apps between S(V) and their own normalization.
    """
    scales = list(scales)
    with transaction.atomic():
        for s in scales:
            PlanClassScale.objects.update_or_create(
                plan_class=s.plan_class,
                defaults={
                    "scale": s.scale,
                    "weight": s.weight,
                    "n_versions": s.n_versions,
                    "computed_time": now,
                },
            )
        if not keep_missing:
            PlanClassScale.objects.exclude(plan_class__in=[s.plan_class for s in scales]).delete()
    return len(scales)


def cross_project_normalize(
    *, now: datetime, fetch: Fetch = fetch_export, external: bool = True
) -> CrossProjectOutcome:
    """The central server's pass, then the design's per-project step for this portal's GPU-only apps.

    1. Collect the rows of every project of the portal (from the database) and of each
       enabled ScaleSource (``external``), recording each source's fetch.
    2. Aggregate them per plan class (apps with both CPU and GPU versions only).
    3. Store the factors as PlanClassScale rows.
    4. Normalize every GPU-only app of the projects that have not paused this daemon, with
       the back end's feeder step, which gives those apps the new factors.

    Network reads happen before any transaction, so a slow source never holds a lock.
    """
    collected = list(app_version_scales_local())
    ok = failed = 0
    sources = list(ScaleSource.objects.filter(enabled=True).order_by("id")) if external else []
    for source in sources:
        fetched = scale_source_read(source=source, now=now, fetch=fetch)
        if fetched is None:
            failed += 1
        else:
            ok += 1
            collected += fetched
    rows = _cross_rows(collected)
    scales = aggregate_plan_class_scales(rows)
    plan_class_scales_store(scales=scales, now=now, keep_missing=failed > 0)
    projects = projects_active_for(daemon=DAEMON)
    normalized = tuple(
        (app_id, credit_normalize_app(app_id=app_id))
        for app_id in gpu_only_app_ids(project_ids=[p.pk for p in projects])
    )
    return CrossProjectOutcome(
        rows=len(rows), sources_ok=ok, sources_failed=failed, plan_classes=scales, normalized=normalized
    )


LOCK = "credit.cross_project"
SKIPPED = "skipped: another cross-project pass is running"


def cross_project_pass_locked(run: Callable[[], DaemonPass]) -> DaemonPass:
    """``run`` one cross-project pass, unless another one (this task on any worker, or the
    ``cross_project_normalize`` command) is running: then nothing, with a note saying so.

    Two passes that read different data (a source down for one, a ``--local-only`` run,
    an app deprecated in between) rewrite PlanClassScale rows in crossing orders and
    PostgreSQL aborts one as a deadlock victim; the one that steps aside loses nothing,
    since the running pass writes fresh factors.
    """
    with daemon_lock(LOCK) as held:
        if not held:
            return DaemonPass(message=SKIPPED)
        return run()


@dataclass(frozen=True, slots=True)
class RecomputeOutcome:
    cross_project: CrossProjectOutcome | None  # None: another pass was running, factors as stored
    rows_changed: int


def app_credit_recompute(*, app_id: int, now: datetime, fetch: Fetch = fetch_export) -> RecomputeOutcome:
    """The admin's "recompute now": fresh cross-project factors, then the app's feeder step.

    ``rows_changed`` counts the app's rows changed by either step (a GPU-only app is
    already normalized by the cross-project pass; the second step then changes nothing).
    """
    with daemon_lock(LOCK) as held:
        cross = cross_project_normalize(now=now, fetch=fetch) if held else None
    changed = credit_normalize_app(app_id=app_id)
    if cross is not None:
        changed += sum(n for a, n in cross.normalized if a == app_id)
    return RecomputeOutcome(cross_project=cross, rows_changed=changed)
