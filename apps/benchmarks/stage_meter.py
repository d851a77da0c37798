"""The stage meter behind ``bench_pipeline``'s table: CPU seconds and SQL statements per stage.

``bench_pipeline`` divides these by the workunits it moved, so a change to one stage is
judged by its own figure rather than by the whole run's rate. The product marks its stages
with ``apps.core.stages.stage``, which does nothing until ``stage_meter_enable`` installs
this meter: in the benchmark's own process (its embedded run), or in the web and worker
processes it starts, through ``COBBLESTONE_STAGE_METER_DIR`` (``BenchmarksConfig.ready``).
Then each block adds its CPU time, of the calling thread so that gunicorn's threads do not
count each other's, and its statements on this thread's connection to the process's totals;
stages may nest, each counting what ran inside it. With a directory, a thread of each
process writes its totals to ``<dir>/<pid>.json`` twice a second, so the sum over all
processes is there whichever way the processes end (a Celery pool process never runs
``atexit``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.db import connection

from apps.core.stages import stage_meter_install

_directory = ""
_totals: dict[str, list[float]] = {}  # stage -> [cpu seconds, statements, calls]
_lock = threading.Lock()
_writer_pid = 0
FLUSH_SECONDS = 0.5
# A forked child (gunicorn's and Celery's workers) counts only its own stages.
os.register_at_fork(after_in_child=_totals.clear)


def stage_meter_enable(directory: str = "") -> None:
    """Meter the stages of this process: in memory (``stage_totals`` reads them), and with
    ``directory``, also written there for ``stage_totals_read``."""
    global _directory
    _directory = directory
    stage_meter_install(_metered)


def stage_meter_disable() -> None:
    global _directory
    _directory = ""
    stage_meter_install(None)


def stage_totals() -> dict[str, tuple[float, int, int]]:
    """This process's totals: stage -> (CPU seconds, statements, calls)."""
    with _lock:
        return {name: (v[0], int(v[1]), int(v[2])) for name, v in _totals.items()}


def stage_totals_reset() -> None:
    with _lock:
        _totals.clear()


def stage_totals_read(directory: Path) -> dict[str, tuple[float, int, int]]:
    """The sum of every process's totals written to ``directory``."""
    summed: dict[str, list[float]] = {}
    for path in directory.glob("*.json"):
        try:
            totals = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being replaced this instant: the next read has it
        for name, values in totals.items():
            into = summed.setdefault(name, [0.0, 0, 0])
            for i in range(3):
                into[i] += values[i]
    return {name: (v[0], int(v[1]), int(v[2])) for name, v in summed.items()}


@contextmanager
def _metered(name: str) -> Iterator[None]:
    """Count the block's CPU time and statements under ``name``."""
    statements = [0]

    def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        statements[0] += 1
        return execute(sql, params, many, context)

    started = time.thread_time()
    try:
        with connection.execute_wrapper(count):
            yield
    finally:
        cpu = time.thread_time() - started
        with _lock:
            into = _totals.setdefault(name, [0.0, 0, 0])
            into[0] += cpu
            into[1] += statements[0]
            into[2] += 1
        if _directory:
            _start_writer()


def _start_writer() -> None:
    """One writer thread per process, started in the process itself (not inherited by a fork)."""
    global _writer_pid
    if _writer_pid == os.getpid():
        return
    _writer_pid = os.getpid()
    threading.Thread(target=_write_forever, name="stage-meter", daemon=True).start()


def _write_forever() -> None:
    path = Path(_directory) / f"{os.getpid()}.json"
    temporary = path.with_suffix(".tmp")
    while True:
        time.sleep(FLUSH_SECONDS)
        with _lock:
            text = json.dumps(_totals)
        temporary.write_text(text)
        os.replace(temporary, path)
