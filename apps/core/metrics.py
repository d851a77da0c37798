"""The Prometheus metrics the request handlers count, served at /metrics (apps.ops.metrics).

Recording one is a counter increment or a histogram observation in memory (a memory-mapped
file per process when PROMETHEUS_MULTIPROC_DIR is set, as under gunicorn, so /metrics sums
every worker process). Nothing here touches the database: the gauges that need queries
(daemon backlogs, work remaining) are computed when /metrics is scraped.

The project label is a known project's slug, or "" for a URL that names none, so a client
sending made-up slugs cannot grow the number of series.
"""

from __future__ import annotations

import logging
from collections import Counter as Tally
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from prometheus_client import Counter, Histogram

logger = logging.getLogger(__name__)

SCHEDULER_RPCS = Counter(
    "cobblestone_scheduler_rpcs",
    "Scheduler RPCs (POSTs to /<slug>/cgi) by project and outcome.",
    ["project", "outcome"],
)
SCHEDULER_RPC_SECONDS = Histogram(
    "cobblestone_scheduler_rpc_seconds",
    "Time from reading a scheduler request to the reply written, by project.",
    ["project"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
JOBS_DISPATCHED = Counter(
    "cobblestone_jobs_dispatched",
    "Results sent to hosts by scheduler RPCs, by project and processing resource.",
    ["project", "resource"],
)
UPLOADS = Counter(
    "cobblestone_uploads",
    "Requests to the upload handler (uploads and size queries) by project and status.",
    ["project", "status"],
)


def scheduler_rpc_observe(*, project: str, outcome: str, seconds: float) -> None:
    with _never_fails():
        SCHEDULER_RPCS.labels(project=project, outcome=outcome).inc()
        SCHEDULER_RPC_SECONDS.labels(project=project).observe(seconds)


def jobs_dispatched_count(*, project: str, resources: Iterable[str]) -> None:
    """One RPC's sent results, given as the resource each runs on (CPU, NVIDIA, ...)."""
    with _never_fails():
        for resource, n in Tally(resources).items():
            JOBS_DISPATCHED.labels(project=project, resource=resource).inc(n)


def upload_count(*, project: str, status: str) -> None:
    with _never_fails():
        UPLOADS.labels(project=project, status=status).inc()


@contextmanager
def _never_fails() -> Iterator[None]:
    """A count that cannot be kept (its metrics directory gone) is logged; the request goes on."""
    try:
        yield
    except Exception:
        logger.exception("metrics: could not record")
