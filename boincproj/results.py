"""The Celery result backend: django-celery-results' table, written so a lost database
connection never stops the worker.

The worker's main process writes results too: it records an expired beat tick as REVOKED,
and a task whose pool process died as FAILURE. That process serves no requests, so nothing
else ever replaces its Django connection; after a PostgreSQL restart the write raised
``OperationalError('the connection is closed')`` out of the message handler and Celery
stopped the worker for good. Here each write first drops a connection Django no longer
trusts (and, with ``CONN_HEALTH_CHECKS``, checks a kept one before using it), tries once
more on a fresh connection, and otherwise logs and gives up on that row: task results
are a record for operators, and no task reads them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, connections
from django_celery_results.backends.database import DatabaseBackend as DjangoDatabaseBackend

logger = logging.getLogger(__name__)


class DatabaseBackend(DjangoDatabaseBackend):
    """django-celery-results' backend that survives database restarts and outages."""

    def _store_result(self, task_id: str, result: Any, status: str, *args: Any, **kwargs: Any) -> Any:
        _refresh_connections(broken=False)
        try:
            return super()._store_result(task_id, result, status, *args, **kwargs)
        except DatabaseError as first:
            # The connection may have died since the check (or the server restarted in between).
            _refresh_connections(broken=True)
            try:
                return super()._store_result(task_id, result, status, *args, **kwargs)
            except DatabaseError as exc:
                _refresh_connections(broken=True)
                logger.warning(
                    "task %s: state %s not recorded, the database is unavailable: %s (first try: %s)",
                    task_id,
                    status,
                    exc,
                    first,
                )
                return result


def _refresh_connections(*, broken: bool) -> None:
    """Drop the connections Django no longer trusts (all of them if ``broken``).

    A connection inside a transaction is left alone: closing it would end that transaction
    (a task run eagerly inside a caller's ``atomic`` block).
    """
    for conn in connections.all(initialized_only=True):
        if conn.in_atomic_block:
            continue
        if broken:
            conn.close()
        else:
            conn.close_if_unusable_or_obsolete()
