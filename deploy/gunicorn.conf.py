"""gunicorn's configuration for Cobblestone: ``gunicorn -c deploy/gunicorn.conf.py``.

The systemd unit (deploy/systemd/cobblestone-web.service) starts it with the environment
file, whose GUNICORN_* values set the address and the number of processes and threads.
gthread workers: the scheduler RPC spends part of its time waiting on PostgreSQL, and a few
threads per process keep the CPU busy meanwhile.

Metrics: every worker process counts scheduler RPCs and uploads in its own files under
PROMETHEUS_MULTIPROC_DIR (default: the unit's runtime directory, /run/cobblestone), and
/metrics sums them. The directory is emptied when gunicorn starts (the counts of an earlier
run are not carried over) and a dead worker's files are marked as such.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

_base = Path(__file__).resolve().parents[1]
_state = os.environ.get("RUNTIME_DIRECTORY") or os.environ.get("COBBLESTONE_VAR_DIR") or str(_base / "var")
# Set before any worker imports prometheus_client, which reads it once.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(Path(_state) / "prometheus"))

wsgi_app = "boincproj.wsgi:application"
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000").split(",")
workers = int(os.environ.get("GUNICORN_WORKERS", "4"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# gthread, stamping each request with the time it was queued, which the scheduler's load
# shedding counts (boincproj/gunicorn_worker.py).
worker_class = "boincproj.gunicorn_worker.ThreadWorker"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
graceful_timeout = 30
# Longer than nginx keeps an idle upstream connection (60 s), so nginx closes first.
keepalive = 75
# Recycle a worker now and then (jittered, so not all at once): bounds slow memory growth.
max_requests = 20000
max_requests_jitter = 2000
proc_name = "cobblestone-web"
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "INFO").lower()
# nginx logs every request; set GUNICORN_ACCESS_LOG=- to log them here as well.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
# Account keys and password hashes in query strings are logged as *** (boincproj/access_log.py).
logger_class = "boincproj.access_log.AccessLogger"


def on_starting(server: Any) -> None:
    metrics = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True, exist_ok=True)


def post_fork(server: Any, worker: Any) -> None:
    # A worker must not outlive its master, whatever killed the master: it would keep the
    # port and serve old code until someone finds it.
    from apps.core.processes import die_with_parent

    die_with_parent(server.pid)


def child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
