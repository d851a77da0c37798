"""/health/: django-health-check's checks plus the ones a Cobblestone project needs.

Checks: the database answers; the Celery broker accepts a connection; a Celery worker
answers a ping (and consumes the default queue); every data area has free space; no
migration of the running code is missing from the database; collectstatic has stored every
static file (production). A monitoring client
(apps.ops.access) gets the report (HTML, JSON with ``Accept: application/json`` or
``?format=json``, text, OpenMetrics); anyone else gets only ``{"status": ...}``. Unhealthy
is HTTP 503 either way.
"""

from __future__ import annotations

import dataclasses
import os
import time
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from celery import Celery
from django.conf import settings
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.http import HttpRequest, HttpResponse, JsonResponse
from health_check.base import HealthCheck
from health_check.checks import Database
from health_check.contrib.celery import Ping
from health_check.exceptions import ServiceUnavailable
from health_check.views import HealthCheckView

from apps.ops.access import monitoring_allowed
from apps.ops.static import COLLECTSTATIC, uncollected
from boincproj.celery import app as celery_app

MB = 1024 * 1024
# Anyone may ask for the summary; within this many seconds one process answers from its
# last run instead of pinging the broker and workers again.
SUMMARY_CACHE_SECONDS = 10.0


@dataclasses.dataclass
class Broker(HealthCheck):
    """The Celery broker (Redis in production) accepts a connection."""

    app: Celery = dataclasses.field(default_factory=lambda: celery_app, repr=False)
    timeout: timedelta = dataclasses.field(default=timedelta(seconds=3), repr=False)

    def run(self) -> None:
        try:
            with self.app.connection_for_write(connect_timeout=self.timeout.total_seconds()) as conn:
                conn.ensure_connection(max_retries=1)
        except Exception as exc:
            raise ServiceUnavailable(f"cannot connect: {type(exc).__name__}") from exc


@dataclasses.dataclass
class DataAreaDisk(HealthCheck):
    """Free space of COBBLESTONE_DATA_DIR and of each project's download and upload areas
    that lie on another file system, against HEALTH_DISK_MIN_FREE_MB."""

    def run(self) -> None:
        root = Path(settings.COBBLESTONE_DATA_DIR)
        if not root.is_dir():
            raise ServiceUnavailable("the data directory does not exist")
        floor = settings.HEALTH_DISK_MIN_FREE_MB * MB
        for path, free in data_areas_free_bytes(root):
            if free < floor:
                raise ServiceUnavailable(
                    f"{path}: {free // MB} MB free, below HEALTH_DISK_MIN_FREE_MB={floor // MB}"
                )


def data_areas_free_bytes(root: Path) -> list[tuple[Path, int]]:
    """(area, free bytes) for the data directory and each project area on another device."""
    seen: set[int] = set()
    out = []
    for path in [root, *sorted(root.glob("*/download")), *sorted(root.glob("*/upload"))]:
        stat = os.statvfs(path)
        device = os.stat(path).st_dev
        if device in seen:
            continue
        seen.add(device)
        out.append((path, stat.f_bavail * stat.f_frsize))
    return out


@dataclasses.dataclass
class Migrations(HealthCheck):
    """Every migration of the running code is applied (an upgrade ran ``migrate``)."""

    def run(self) -> None:
        with connection.temporary_connection():
            applied = set(MigrationRecorder(connection).applied_migrations())
        missing = sorted(code_migrations() - applied)
        if missing:
            app, name = missing[0]
            raise ServiceUnavailable(f"{len(missing)} migration(s) not applied, first {app}.{name}")


@lru_cache(maxsize=1)
def code_migrations() -> frozenset[tuple[str, str]]:
    """The migrations the running code has (read once: code does not change under a process)."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return frozenset(loader.graph.nodes)


@dataclasses.dataclass
class StaticFiles(HealthCheck):
    """collectstatic stored every static file the pages name (with the manifest storage)."""

    def run(self) -> None:
        problem = uncollected()
        if problem:
            raise ServiceUnavailable(f"{problem}: run {COLLECTSTATIC}")


@dataclasses.dataclass
class CeleryWorkers(Ping):
    """A worker answers a ping (the first answer is enough) and consumes the default queue."""

    app: Celery = dataclasses.field(default_factory=lambda: celery_app, repr=False)
    limit: int | None = dataclasses.field(default=1, repr=False)


class HealthView(HealthCheckView):
    checks = (
        Database,
        Broker,
        CeleryWorkers,
        DataAreaDisk,
        Migrations,
        StaticFiles,
    )
    _summary: tuple[float, bool] | None = None

    async def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not monitoring_allowed(request):
            return await self._summary_response(request)
        response = await super().get(request, *args, **kwargs)
        if response.status_code == 500:  # the library's "unhealthy"; 503 tells balancers to wait
            response.status_code = 503
        return response

    async def _summary_response(self, request: HttpRequest) -> HttpResponse:
        cached = HealthView._summary
        if cached is None or time.monotonic() - cached[0] > SUMMARY_CACHE_SECONDS:
            response = await super().get(request)
            cached = (time.monotonic(), response.status_code == 200)
            HealthView._summary = cached
        healthy = cached[1]
        return JsonResponse({"status": "healthy" if healthy else "unhealthy"}, status=200 if healthy else 503)
