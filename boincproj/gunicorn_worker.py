"""gunicorn's threaded worker, stamping each request with the time it was queued.

A gthread worker queues every request that has arrived until one of its threads is free;
Django only sees a request once it leaves that queue, so it cannot tell how long it
waited. This worker records when a connection was queued (accepted, or readable again on
keep-alive) and passes it on as ``X-Request-Start: t=<seconds>``, as a front end such as
nginx would (replacing whatever the client sent). The scheduler's load shedding counts
that wait (apps/scheduler/admission.py).

    gunicorn boincproj.wsgi --worker-class boincproj.gunicorn_worker.ThreadWorker
"""

from __future__ import annotations

import time
from typing import Any

from gunicorn.workers import gthread

HEADER = "X-REQUEST-START"  # gunicorn keeps header names upper-case


class ThreadWorker(gthread.ThreadWorker):
    def enqueue_req(self, conn: Any) -> None:
        conn.cobblestone_queued_at = time.time()
        super().enqueue_req(conn)

    def handle_request(self, req: Any, conn: Any) -> Any:
        queued_at = getattr(conn, "cobblestone_queued_at", None)
        if queued_at is not None:
            req.headers = [(name, value) for name, value in req.headers if name != HEADER]
            req.headers.append((HEADER, f"t={queued_at:.6f}"))
        return super().handle_request(req, conn)
