"""Child processes a stack or a benchmark starts, watches, stops, restarts and kills."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


class StackError(RuntimeError):
    """A part did not start or answer; the message says which, with the end of its log."""


def free_port() -> int:
    """A TCP port nothing listens on now (on 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def http_answers(url: str) -> bool:
    """Any HTTP answer (an error status too) means the server is up."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def wait_for(
    predicate: Callable[[], object], *, timeout: float, what: str, alive: Callable[[], bool]
) -> None:
    """Poll ``predicate`` until true; StackError if ``alive()`` turns false or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if not alive():
            raise StackError(f"{what}: the process exited")
        if time.monotonic() > deadline:
            raise StackError(f"{what}: not ready after {timeout:.0f} s")
        time.sleep(0.2)


def child_pids(pid: int) -> list[int]:
    """The direct children of a process (Linux /proc), e.g. gunicorn's or Celery's workers."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in path.read_text().split()]
    except OSError:
        return []


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a process and its live children (Linux /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for p in [pid, *child_pids(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


@dataclass
class ManagedProcess:
    """One long-running program (gunicorn, a Celery worker, nginx, redis-server...).

    ``ready`` says when it serves; ``start`` waits for it. The program runs in a session of
    its own, so ``stop`` can end whatever it forked and left behind; ``kill`` sends one signal
    to the main process only (as a crash or the OOM killer would).
    """

    name: str
    command: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    ready: Callable[[], object] = lambda: True
    start_timeout: float = 90.0
    stop_timeout: float = 20.0
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise StackError(f"{self.name} is not started")
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.running():
            return
        if self.proc is not None:
            self.stop()  # what a killed main process left behind (nginx's workers hold its port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            out.write(f"--- {time.strftime('%H:%M:%S')} start: {' '.join(self.command)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_for(self.ready, timeout=self.start_timeout, what=self.name, alive=self.running)
        except StackError as exc:
            raise StackError(f"{exc}\n--- {self.log_path} (end) ---\n{self.log()[-4000:]}") from None

    def stop(self) -> None:
        """SIGTERM (gunicorn, Celery and nginx shut down their own children), SIGKILL after
        ``stop_timeout``, then anything left in the process's session."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the main process only, and reap it if it ends."""
        os.kill(self.pid, sig)
        if sig == signal.SIGKILL:
            assert self.proc is not None
            self.proc.wait(timeout=10)

    def children(self) -> list[int]:
        """PIDs of the worker processes it forked (gunicorn workers, Celery's pool, nginx workers)."""
        return child_pids(self.pid) if self.running() else []

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextmanager
def running(process: ManagedProcess) -> Iterator[ManagedProcess]:
    """Start ``process`` for the block; stop it afterwards whatever happens."""
    try:
        process.start()
        yield process
    finally:
        process.stop()
