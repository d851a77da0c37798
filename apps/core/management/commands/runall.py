"""Serve the portal, a Celery worker and Celery beat together; Ctrl-C stops them all.

Steps:

1. start gunicorn, the worker and beat, each in a process group of its own (so a signal
   reaches a child's own processes too: gunicorn's workers, the worker's pool) and set to
   be SIGKILLed if this command ends without stopping them (gunicorn's workers likewise
   with their master, deploy/gunicorn.conf.py);
2. supervise: a child that exits is restarted after a back-off (1 s, doubling to a minute;
   back to 1 s once it has run for a minute), after whatever is left of its group (a
   gunicorn worker still holding the port) is killed; the others keep running;
3. on Ctrl-C (SIGINT) or SIGTERM: SIGTERM each child (gunicorn and Celery stop their own
   processes gracefully), wait ``--stop-timeout`` seconds for them to finish, then SIGKILL
   every group, so no child outlives the command. A second Ctrl-C skips the wait, and so
   does the end of the process that started this one (``make`` killed after passing on
   its SIGTERM): nobody is left waiting for a graceful end.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.core.processes import die_with_parent

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
STABLE_SECONDS = 60.0  # a child that ran this long starts over from the first back-off
POLL_SECONDS = 0.2


@dataclass
class Child:
    """One supervised command and its current process."""

    name: str
    command: list[str]
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    backoff: float = BACKOFF_FIRST
    restart_at: float = 0.0
    restarts: int = field(default=0)


def signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the child's whole process group (it leads one: start_new_session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is empty
        os.killpg(proc.pid, sig)


class Command(BaseCommand):
    help = "Run the web server (gunicorn), one Celery worker and Celery beat until interrupted."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--bind", default="127.0.0.1:8000")
        parser.add_argument("--web-workers", type=int, default=2)
        parser.add_argument("--threads", type=int, default=8, help="threads per gunicorn worker")
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes")
        parser.add_argument(
            "--stop-timeout", type=float, default=20.0, help="seconds the children get to stop before SIGKILL"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        self.stopping = 0  # signals received
        self.parent = os.getppid()
        children = [Child(name, command) for name, command in self.commands(opts).items()]
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        for child in children:
            if not self.stopping:
                self.start(child)
        self.stdout.write(
            self.style.SUCCESS(f"Portal on http://{opts['bind']}/  (admin: /admin/)  Ctrl-C stops all.")
        )
        try:
            self.supervise(children)
        finally:
            self.stop(children, opts["stop_timeout"])

    def commands(self, opts: dict[str, Any]) -> dict[str, list[str]]:
        bin_dir = settings.BASE_DIR / ".venv" / "bin"
        gunicorn = str(bin_dir / "gunicorn") if (bin_dir / "gunicorn").exists() else "gunicorn"
        celery = str(bin_dir / "celery") if (bin_dir / "celery").exists() else "celery"
        # gunicorn's own wait for its workers ends before ours does.
        graceful = max(1, int(opts["stop_timeout"]) - 2)
        return {
            # The production configuration (metrics summed over the worker processes), with
            # this command's address and sizes.
            "web": [
                gunicorn,
                "-c",
                str(settings.BASE_DIR / "deploy" / "gunicorn.conf.py"),
                "--bind",
                opts["bind"],
                "--workers",
                str(opts["web_workers"]),
                "--threads",
                str(opts["threads"]),
                # gthread, stamping each request with the time it was queued (load shedding).
                "--worker-class",
                "boincproj.gunicorn_worker.ThreadWorker",
                "--access-logfile",
                "-",
                "--timeout",
                "120",
                "--graceful-timeout",
                str(graceful),
            ],
            "worker": [
                celery,
                "-A",
                "boincproj",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(opts["concurrency"]),
                "--hostname",
                "worker@%h",
            ],
            "beat": [celery, "-A", "boincproj", "beat", "--loglevel", "INFO"],
        }

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stopping += 1

    def start(self, child: Child) -> None:
        child.proc = subprocess.Popen(
            child.command,
            cwd=settings.BASE_DIR,
            start_new_session=True,
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        child.started = time.monotonic()

    def supervise(self, children: list[Child]) -> None:
        """Restart what exits, with back-off, until a signal asks to stop."""
        while not self.stopping:
            now = time.monotonic()
            for child in children:
                if child.proc is None:
                    if now >= child.restart_at:
                        child.restarts += 1
                        self.stderr.write(f"runall: starting {child.name} again (restart {child.restarts})")
                        self.start(child)
                elif child.proc.poll() is not None:
                    self.exited(child, now)
            time.sleep(POLL_SECONDS)

    def exited(self, child: Child, now: float) -> None:
        assert child.proc is not None
        # What the child left behind (gunicorn workers holding the port, pool processes).
        signal_group(child.proc, signal.SIGKILL)
        child.backoff = BACKOFF_FIRST if now - child.started >= STABLE_SECONDS else child.backoff
        self.stderr.write(
            f"runall: {child.name} exited with code {child.proc.returncode}; "
            f"restarting it in {child.backoff:.0f} s"
        )
        child.restart_at = now + child.backoff
        child.backoff = min(child.backoff * 2, BACKOFF_MAX)
        child.proc = None

    def stop(self, children: list[Child], timeout: float) -> None:
        """SIGTERM each child, wait, then SIGKILL every group; reap the leaders."""
        self.stdout.write("Stopping...")
        running = [c.proc for c in children if c.proc is not None]
        for proc in running:
            # The leader only: a Celery worker's pool processes die of SIGTERM mid-task,
            # while the worker itself lets them finish (its warm shutdown).
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while (
            self.stopping < 2
            and os.getppid() == self.parent
            and time.monotonic() < deadline
            and any(p.poll() is None for p in running)
        ):
            time.sleep(POLL_SECONDS)
        for proc in running:
            signal_group(proc, signal.SIGKILL)
            proc.wait()
