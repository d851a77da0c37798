"""``manage.py runall`` (what ``make run`` serves): a child that dies is restarted, and
Ctrl-C or SIGTERM leaves no process behind, not even a gunicorn worker holding the port,
nor does SIGTERM then SIGKILL 3 s later (a supervisor's stop) at any moment of start-up."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from apps.benchmarks.scheduler import free_port
from tests.private_services import server_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT = 6


def runall_env(var: Path, **extra: str) -> dict[str, str]:
    return server_env(var, DEBUG="true", LOG_LEVEL="WARNING", **extra)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A var/ directory with a migrated SQLite database and the beat schedule (as `make run`)."""
    var = tmp_path_factory.mktemp("var")
    prepare(var, ["migrate", "--noinput", "-v", "0"], ["setup_periodic_tasks"])
    return var


def prepare(var: Path, *commands: list[str]) -> None:
    """Run these manage.py commands on ``var``, as `make run` does before runall."""
    for command in commands:
        subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=runall_env(var),
            check=True,
            capture_output=True,
        )


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def child_named(runall: subprocess.Popen, word: str) -> int | None:
    return next((p for p in children(runall.pid) if word in command_line(p)), None)


def wait_until(condition: Callable[[], object], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def port_free(port: int) -> bool:
    """Whether a new server could listen on ``port``, as gunicorn would (SO_REUSEADDR): the
    connections the test made may still be in TIME_WAIT, which only a process left
    listening should fail."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture
def runall(migrated: Path, tmp_path: Path) -> Iterator[Callable[[], tuple[subprocess.Popen, int]]]:
    """Start runall in a session of its own, as a terminal runs `make run`; kill what is left."""
    started: list[subprocess.Popen] = []
    seen: set[int] = set()

    def start() -> tuple[subprocess.Popen, int]:
        port = free_port()
        command = [sys.executable, "manage.py", "runall", "--bind", f"127.0.0.1:{port}"]
        command += ["--web-workers", "2", "--concurrency", "1", "--stop-timeout", str(STOP_TIMEOUT)]
        log = (tmp_path / f"runall{len(started)}.log").open("wb")
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=runall_env(migrated),
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(proc)
        wait_until(lambda: answers(port) or proc.poll() is not None)
        assert proc.poll() is None, (tmp_path / f"runall{len(started) - 1}.log").read_text()
        seen.update(descendants(proc.pid))
        return proc, port

    yield start
    for proc in started:
        seen.update(descendants(proc.pid))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for pid in seen:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_dead_worker_is_started_again_and_the_portal_stays_up(runall):
    proc, port = runall()
    wait_until(lambda: child_named(proc, "boincproj worker") is not None)
    worker = child_named(proc, "boincproj worker")
    assert worker is not None
    os.kill(worker, signal.SIGKILL)

    wait_until(lambda: child_named(proc, "boincproj worker") not in (None, worker))
    assert proc.poll() is None
    assert answers(port)


def test_a_dead_web_server_is_started_again_on_its_port(runall):
    proc, port = runall()
    master = child_named(proc, "gunicorn")
    assert master is not None
    os.kill(master, signal.SIGKILL)  # its workers are left holding the port

    wait_until(lambda: child_named(proc, "gunicorn") not in (None, master) and answers(port))
    assert proc.poll() is None


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_stopping_leaves_no_process_behind_even_a_hung_web_worker(runall, how):
    proc, port = runall()
    wait_until(
        lambda: (
            child_named(proc, "boincproj worker") is not None
            and child_named(proc, "boincproj beat") is not None
        )
    )
    everything = descendants(proc.pid)
    master = child_named(proc, "gunicorn")
    assert master is not None
    hung = children(master)[0]
    os.kill(hung, signal.SIGSTOP)  # a worker that never answers its master (deadlocked)

    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends to the foreground group
    else:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=STOP_TIMEOUT + 30)

    wait_until(lambda: not any(alive(p) for p in everything), seconds=10)
    assert port_free(port)


def marked(marker: str) -> list[int]:
    """The live processes whose environment holds ``marker``: whatever a run started."""
    needle = f"RUNALL_TEST_MARKER={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and needle in (entry / "environ").read_bytes() and alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def is_web_worker(pid: int) -> bool:
    """A gunicorn worker: a gunicorn process whose parent is one too (its master)."""
    try:
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return False
    return "gunicorn" in command_line(pid) and "gunicorn" in command_line(parent)


@pytest.fixture
def supervised_stop(migrated: Path, tmp_path: Path) -> Iterator[Callable[..., list[str]]]:
    """Run a command (made for the address to serve on) in a session of its own on ``var``,
    SIGTERM it after ``delay`` seconds (None: once the portal answers, with one gunicorn
    worker stopped by SIGSTOP to stand for a hung one), SIGKILL it 3 s later,
    as a supervisor or ``docker stop`` does; return the command lines of the processes of
    that run still alive 3 s after that."""
    markers: list[str] = []

    def stop(
        command_for: Callable[[str], list[str]], delay: float | None, var: Path = migrated, **env: str
    ) -> list[str]:
        marker = uuid.uuid4().hex
        markers.append(marker)
        port = free_port()
        command = command_for(f"127.0.0.1:{port}")
        log = (tmp_path / f"{marker}.log").open("wb")
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=runall_env(var, RUNALL_TEST_MARKER=marker, **env),
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if delay is None:
            wait_until(lambda: answers(port))
            # A request that never ends: without the SIGKILL, gunicorn would wait for it.
            os.kill(next(pid for pid in marked(marker) if is_web_worker(pid)), signal.SIGSTOP)
        else:
            time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        time.sleep(3)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        deadline = time.monotonic() + 3
        while marked(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        return [command_line(pid) for pid in marked(marker)]

    yield stop
    for marker in markers:
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)


def runall_command(bind: str) -> list[str]:
    return [sys.executable, "manage.py", "runall", "--bind", bind, "--concurrency", "1", "--web-workers", "2"]


# From runall's own start-up to gunicorn loading Django and the worker starting its pool.
@pytest.mark.parametrize("delay", [0.5, 1.5, 3.0, 4.5, None])
def test_sigterm_then_sigkill_during_start_up_leaves_no_process(supervised_stop, delay):
    assert supervised_stop(runall_command, delay) == []


@pytest.fixture(scope="module")
def made(migrated: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A var/ as a first `make run` leaves it: the demo project and the admin account too."""
    var = tmp_path_factory.mktemp("made")
    shutil.copytree(migrated, var, dirs_exist_ok=True)
    prepare(var, ["seed_demo", "--if-empty"], ["ensure_admin"])
    return var


# During migrate, the demo's and the admin's set-up, runall's start-up; once it serves.
@pytest.mark.parametrize("delay", [1.0, 6.0, 13.0, None])
def test_make_run_stopped_at_any_moment_of_its_start_up_leaves_no_process(supervised_stop, made, delay):
    """make passes SIGTERM on to the command it runs and waits for it; once make itself is
    SIGKILLed, runall ends its children at once instead of after its stop timeout (20 s)."""

    def make_run(bind: str) -> list[str]:
        return ["make", "--no-print-directory", "run", f"RUNALL_ARGS=--bind {bind} --concurrency 1"]

    assert supervised_stop(make_run, delay, var=made, SECRET_KEY="make-run-test-" + "k" * 50) == []


def test_runall_killed_outright_takes_its_children_even_a_hung_web_worker(runall):
    proc, port = runall()
    wait_until(lambda: child_named(proc, "boincproj worker") is not None)
    everything = descendants(proc.pid)
    master = child_named(proc, "gunicorn")
    assert master is not None
    os.kill(children(master)[0], signal.SIGSTOP)  # it cannot notice its master is gone

    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    wait_until(lambda: not any(alive(p) for p in everything), seconds=3)
    assert port_free(port)


# Ignores SIGTERM, then says so by creating the file named by its argument.
STUBBORN = "import pathlib, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
STUBBORN += "pathlib.Path(sys.argv[1]).touch(); time.sleep(120)"
RUNALL_ONE_CHILD = f"""
import sys, time, django
django.setup()
from apps.core.management.commands.runall import Child, Command
Command().start(Child("stubborn", [sys.executable, "-c", {STUBBORN!r}, sys.argv[1]]))
time.sleep(120)
"""


def test_a_child_deaf_to_sigterm_dies_with_runall(migrated, tmp_path):
    """As a Celery worker already in its warm shutdown is."""
    marker = uuid.uuid4().hex
    env = runall_env(migrated, RUNALL_TEST_MARKER=marker)
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", RUNALL_ONE_CHILD, str(ready)], cwd=ROOT, env=env)
    try:
        wait_until(ready.exists, seconds=30)
        proc.kill()
        proc.wait()

        wait_until(lambda: not marked(marker), seconds=3)
    finally:
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)


# From Django's set-up to the pool's processes starting and the worker being ready.
@pytest.mark.parametrize("delay", [0.5, 1.5, 3.0, 5.0])
def test_a_celery_worker_told_to_stop_during_its_start_up_exits(migrated, tmp_path, delay):
    """SIGTERM alone, as systemd sends it to the worker unit's main process."""
    marker = uuid.uuid4().hex
    celery = Path(sys.executable).parent / "celery"
    command = [str(celery), "-A", "boincproj", "worker", "--concurrency", "1", "--loglevel", "WARNING"]
    with (tmp_path / "worker.log").open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=runall_env(migrated, RUNALL_TEST_MARKER=marker), stdout=log, stderr=log
        )
    try:
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        wait_until(lambda: not marked(marker), seconds=5)
    finally:
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)
