"""Profile the scheduler service in-process with cProfile, driven by emulated hosts.

The hosts talk to Django's test client instead of a socket, one RPC at a time, so the
profile holds the whole request path (URL routing, the view, the XML codec, the
scheduler service and the ORM) and nothing of gunicorn or the network. The hosts' own
work is in it too: lean hosts (apps/benchmarks/lean.py) keep that small.
"""

from __future__ import annotations

import cProfile
import functools
import io
import pstats
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.db import connection
from django.test import Client

from apps.benchmarks.lean import LeanConfig, make_lean_hosts, step_safely
from apps.emulator.live.run import HostDriver, LiveConfig, SummarizedHost, _Clock, make_hosts, summarize
from apps.emulator.live.wire import UploadGate

_PROJECT_ROOT = str(Path(__file__).resolve().parents[2])


class ClientSession:
    """A ``Session`` over Django's test client (in-process, no network)."""

    def __init__(self) -> None:
        self.client = Client()

    def request(
        self, method: str, url: str, body: bytes | None = None, *, content_type: str = ""
    ) -> tuple[int, bytes]:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        if method == "POST":
            response = self.client.post(target, data=body or b"", content_type=content_type)
        else:
            response = self.client.get(target)
        return response.status_code, response.content

    def close(self) -> None:
        return None


def profile_hosts(
    config: LiveConfig, *, rpcs: int, top: int = 25, dump: str = "", client: str = "emulated"
) -> str:
    """Run the hosts round-robin until ``rpcs`` RPCs are made; the hotspots as text.

    ``client`` is "emulated" (``config.policy``) or "lean" (``config``'s hardware,
    accounts and buffer).
    """
    gate = UploadGate(config.uploads)
    hosts, steps = _hosts(config, gate, client)
    running = list(steps)
    profiler = cProfile.Profile()
    queries = _QueryTimer()
    started = time.monotonic()
    with connection.execute_wrapper(queries):
        profiler.enable()
        while sum(h.stats.rpcs for h in hosts) < rpcs and running:
            running = [step for step in running if step()]
        profiler.disable()
    summary = summarize(hosts, time.monotonic() - started, gate)
    if dump:
        profiler.dump_stats(dump)  # for pstats / snakeviz
    out = io.StringIO()
    out.write(
        f"{summary.rpcs} RPCs, {summary.jobs_received} jobs dispatched, {summary.results_acked} results "
        f"acknowledged in {summary.wall_seconds:.1f} s under cProfile "
        f"({summary.wall_seconds / max(summary.rpcs, 1) * 1000:.1f} ms per RPC); errors: {len(summary.errors)}\n"
    )
    stats = pstats.Stats(profiler, stream=out)
    out.write("\nProject functions by cumulative time (file:line):\n")
    _table(out, stats, key="cumulative", top=top, only_project=True, rpcs=summary.rpcs)
    out.write("\nAll functions by own time (file:line):\n")
    _table(out, stats, key="tottime", top=top, only_project=False, rpcs=summary.rpcs)
    out.write("\nSQL by total time (the scheduler line that ran it):\n")
    queries.write(out, rpcs=max(summary.rpcs, 1), top=15)
    return out.getvalue()


def _hosts(
    config: LiveConfig, gate: UploadGate, client: str
) -> tuple[Sequence[SummarizedHost], list[Callable[[], bool]]]:
    """The hosts, and per host a step that returns False once the host is done."""
    if client == "lean":
        lean = LeanConfig(
            master_url=config.master_url,
            hardware=config.hardware,
            authenticators=config.authenticators,
            prefs=config.prefs,
            uploads=config.uploads,
            seed=config.seed,
        )
        hosts = make_lean_hosts(lean, gate, ClientSession)
        return hosts, [functools.partial(step_safely, h) for h in hosts]
    emulated = make_hosts(config, gate, ClientSession)
    stop = threading.Event()
    drivers = [HostDriver(h, _Clock(None), config.sim_hours * 3600.0, stop) for h in emulated]

    def step(driver: HostDriver) -> bool:
        driver.step()
        return not driver.done

    return emulated, [functools.partial(step, d) for d in drivers]


class _QueryTimer:
    """A Django execute wrapper: time per (SQL shape, calling line of the project)."""

    def __init__(self) -> None:
        self.totals: dict[tuple[str, str], list[float]] = {}

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = time.perf_counter() - start
            key = (_caller(), " ".join(sql.split())[:160])
            entry = self.totals.setdefault(key, [0, 0.0])
            entry[0] += 1
            entry[1] += elapsed

    def write(self, out: io.StringIO, *, rpcs: int, top: int) -> None:
        rows = sorted(self.totals.items(), key=lambda item: -item[1][1])
        out.write(f"{'ms/RPC':>8} {'calls/RPC':>9}  caller | SQL\n")
        for (caller, sql), (count, total) in rows[:top]:
            out.write(f"{total / rpcs * 1000:8.2f} {count / rpcs:9.2f}  {caller} | {sql}\n")


def _caller() -> str:
    """The innermost frame in apps/ other than this module: who issued the query."""
    for frame in reversed(traceback.extract_stack(limit=40)):
        if "/apps/" in frame.filename and not frame.filename.endswith("profiling.py"):
            return f"{frame.filename.replace(_PROJECT_ROOT + '/', '')}:{frame.lineno}"
    return "?"


def _table(
    out: io.StringIO, stats: pstats.Stats, *, key: str, top: int, only_project: bool, rpcs: int
) -> None:
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]  # not in typeshed
        if only_project and (not filename.startswith(_PROJECT_ROOT) or "/.venv/" in filename):
            continue
        rows.append(
            (cumtime if key == "cumulative" else tottime, ncalls, tottime, cumtime, filename, line, name)
        )
    rows.sort(reverse=True)
    out.write(f"{'ms/RPC cum':>10} {'ms/RPC own':>10} {'calls/RPC':>9}  function\n")
    for _, ncalls, tottime, cumtime, filename, line, name in rows[:top]:
        where = filename.replace(_PROJECT_ROOT + "/", "")
        out.write(
            f"{cumtime / rpcs * 1000:10.2f} {tottime / rpcs * 1000:10.2f} {ncalls / rpcs:9.1f}  {where}:{line}({name})\n"
        )
