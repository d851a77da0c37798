"""/metrics: Prometheus's text format, for monitoring clients only (apps.ops.access).

The counters and the latency histogram (apps.core.metrics) are read from every gunicorn
worker's files when PROMETHEUS_MULTIPROC_DIR is set (deploy/gunicorn.conf.py sets it), else
from this process. The gauges are queried now, per project: each daemon's backlog and the
age of its last pass, and the work remaining per app (results unsent and in progress).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from apps.applications.models import App
from apps.core import clock
from apps.ops.access import monitoring_allowed
from apps.portal.selectors import daemon_status_list, result_counts_by_app, work_backlog_get
from apps.projects.models import Project
from apps.work.domain.states import ServerState

logger = logging.getLogger(__name__)


class ProjectCollector:
    """Gauges read from the database at scrape time (a few indexed queries per project)."""

    def collect(self) -> Iterator[Metric]:
        """The gauges, or only ``cobblestone_database_up 0`` when the database cannot answer
        (the counters are still served: a scrape never fails with the database)."""
        up = GaugeMetricFamily("cobblestone_database_up", "1 if the scrape could read the database.")
        try:
            families = list(self._families())
        except DatabaseError:
            logger.warning("metrics: the database did not answer", exc_info=True)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _families(self) -> Iterator[Metric]:
        now = clock.now()
        backlog = GaugeMetricFamily(
            "cobblestone_daemon_backlog", "Rows waiting for a back-end daemon.", labels=["project", "daemon"]
        )
        transition_lag = GaugeMetricFamily(
            "cobblestone_transitioner_lag_seconds",
            "How long the most overdue workunit has waited for the transitioner.",
            labels=["project"],
        )
        age = GaugeMetricFamily(
            "cobblestone_daemon_last_run_age_seconds",
            "Seconds since a daemon's last recorded pass for the project (absent: never ran).",
            labels=["project", "daemon"],
        )
        paused = GaugeMetricFamily(
            "cobblestone_daemon_paused",
            "1 if the daemon is paused for the project.",
            labels=["project", "daemon"],
        )
        remaining = GaugeMetricFamily(
            "cobblestone_results",
            "Results not yet returned, per app and state.",
            labels=["project", "app", "state"],
        )
        for project in Project.objects.order_by("slug"):
            slug = project.slug
            work = work_backlog_get(project=project, now=now)
            for daemon, n in (
                ("transitioner", work.workunits_waiting_transition),
                ("validator", work.workunits_waiting_validation),
                ("assimilator", work.workunits_waiting_assimilation),
                ("file_deleter", work.workunits_waiting_deletion + work.results_waiting_deletion),
            ):
                backlog.add_metric([slug, daemon], n)
            transition_lag.add_metric([slug], work.transitioner_backlog_seconds)
            for status in daemon_status_list(project=project, now=now):
                paused.add_metric([slug, status.name], 1 if status.state == "disabled" else 0)
                if status.last_run is not None:
                    age.add_metric([slug, status.name], (now - status.last_run).total_seconds())
            counts = result_counts_by_app(project=project)
            for app in App.objects.filter(project=project, deprecated=False).order_by("name"):
                for state, label in (
                    (ServerState.UNSENT, "unsent"),
                    (ServerState.IN_PROGRESS, "in_progress"),
                ):
                    remaining.add_metric([slug, app.name, label], counts.get((app.id, state), 0))
        yield from (backlog, transition_lag, age, paused, remaining)


class _Sources:
    """Several collectors read as one registry (generate_latest only calls collect())."""

    def __init__(self, *sources: CollectorRegistry | ProjectCollector) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source.collect()


def request_metrics_registry() -> CollectorRegistry:
    """Every process's counters and histograms (multiprocess mode), or this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        return registry
    return REGISTRY


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not monitoring_allowed(request):
        return HttpResponse("Forbidden: not a monitoring client\n", status=403, content_type="text/plain")
    body = generate_latest(_Sources(request_metrics_registry(), ProjectCollector()))
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
