"""Drive Debian's stock BOINC client (7.20.5) against the live test server.

The client runs as docs/protocol.md describes: a private --dir, a private GUI-RPC
port on loopback, cc_config with report_results_immediately, a global_prefs_override,
and it is stopped by ``boinccmd --quit`` or by its PID, never by name. The master URL
must use 127.0.0.1 (the client refuses host names without a dot, such as localhost).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from apps.applications.models import App
from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.volunteers.models import Account, make_passwd_hash, passwd_hash
from apps.work.models import Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, workunit_create
from tests.conftest import require_service

GUI_PASSWORD = "e2e-gui-pw"
PLATFORM = "x86_64-pc-linux-gnu"
WORKER = Path(__file__).resolve().parents[2] / "apps" / "portal" / "demo" / "worker.sh"

CC_CONFIG = """<cc_config>
  <log_flags>
    <sched_ops>1</sched_ops><sched_op_debug>1</sched_op_debug>
    <task>1</task><task_debug>1</task_debug>
    <file_xfer>1</file_xfer><file_xfer_debug>1</file_xfer_debug>
    <unparsed_xml>1</unparsed_xml>
  </log_flags>
  <options>
    <dont_contact_ref_site>1</dont_contact_ref_site>
    <no_info_fetch>1</no_info_fetch>
    <report_results_immediately>1</report_results_immediately>
{extra}  </options>
</cc_config>
"""

GLOBAL_PREFS = """<global_preferences>
  <run_on_batteries>1</run_on_batteries><run_if_user_active>1</run_if_user_active>
  <idle_time_to_run>0</idle_time_to_run><suspend_cpu_usage>0</suspend_cpu_usage>
  <cpu_usage_limit>100</cpu_usage_limit><max_ncpus_pct>100</max_ncpus_pct>
  <work_buf_min_days>0.01</work_buf_min_days><work_buf_additional_days>0</work_buf_additional_days>
  <disk_max_used_gb>5</disk_max_used_gb><disk_min_free_gb>0.1</disk_min_free_gb>
</global_preferences>
"""


def url_dir_name(master_url: str) -> str:
    """The client's file-name form of a master URL."""
    text = re.sub(r"^https?://", "", master_url)
    return re.sub(r"[^A-Za-z0-9._-]", "_", text).rstrip("_")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(predicate: Callable[[], Any], *, timeout: float, what: str, client: BoincClient) -> Any:
    """Poll until ``predicate()`` is truthy; on timeout fail with the client's log tail."""
    deadline = time.monotonic() + timeout
    while True:
        exited = client.proc is not None and client.proc.poll() is not None
        value = predicate()
        if value:
            return value
        if exited or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    why = "the client exited" if exited else "timed out"
    pytest.fail(f"{why} waiting for {what}\n--- client log (tail) ---\n{client.log()[-4000:]}")


@dataclass
class BoincClient:
    """One private client process and its data directory."""

    binary: str
    boinccmd: str
    dir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(
        self,
        *args: str,
        exit_when_idle: bool = False,
        fetch_minimal_work: bool = True,
        ncpus: int | None = None,
        env: dict[str, str] | None = None,
        info_fetch: bool = False,
    ) -> None:
        """Run the client with the flags docs/protocol.md gives (``args`` e.g. --attach_project URL KEY).

        --fetch_minimal_work makes the client ask for work only once; a test that needs a
        second job after the first turns it off. ``ncpus`` limits the CPUs it uses; ``env``
        is added to its environment, which the apps it runs inherit. ``info_fetch`` lets it
        fetch RSS feeds (notices), which no_info_fetch turns off with BOINC's own lists.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "gui_rpc_auth.cfg").write_text(GUI_PASSWORD)
        extra = f"    <ncpus>{ncpus}</ncpus>\n" if ncpus else ""
        config = CC_CONFIG.format(extra=extra)
        if info_fetch:
            config = config.replace("<no_info_fetch>1</no_info_fetch>", "<no_info_fetch>0</no_info_fetch>")
        (self.dir / "cc_config.xml").write_text(config)
        (self.dir / "global_prefs_override.xml").write_text(GLOBAL_PREFS)
        command = [
            self.binary,
            "--dir",
            str(self.dir),
            "--gui_rpc_port",
            str(self.port),
            "--no_gpus",
            "--skip_cpu_benchmarks",
            *([] if info_fetch else ["--no_info_fetch"]),
            *(["--exit_when_idle"] if exit_when_idle else []),
            *(["--fetch_minimal_work"] if fetch_minimal_work else []),
            *args,
        ]
        with (self.dir / "client_stdout.txt").open("ab") as out:
            # A session of its own: its app processes share its process group, so teardown
            # can end exactly those (a plain script app ignores the client's quit request).
            self.proc = subprocess.Popen(
                command,
                cwd=self.dir,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **(env or {})},
            )
        wait_until(self._rpc_ready, timeout=15, what="the GUI RPC port", client=self)

    def _rpc_ready(self) -> bool:
        try:
            return self.cmd("--client_version", check=False).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def cmd(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [self.boinccmd, "--host", f"127.0.0.1:{self.port}", "--passwd", GUI_PASSWORD, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            pytest.fail(f"boinccmd {' '.join(args)} failed: {result.stdout}{result.stderr}")
        return result

    def wait_exit(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"client did not exit in {timeout} s\n--- client log ---\n{self.log()[-4000:]}")

    def stop(self) -> None:
        """boinccmd --quit, then SIGTERM/SIGKILL by PID if it lingers; then end the app
        processes left in the client's own process group."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.cmd("--quit", check=False, timeout=10)
                self.proc.wait(timeout=3)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def log(self) -> str:
        path = self.dir / "client_stdout.txt"
        return path.read_text(errors="replace") if path.exists() else ""

    def read(self, name: str) -> str:
        path = self.dir / name
        return path.read_text(errors="replace") if path.exists() else ""

    def project_dir(self, master_url: str) -> Path:
        return self.dir / "projects" / url_dir_name(master_url)

    def rpc_count(self) -> int:
        return self.log().count("Scheduler request completed")

    def update(self, master_url: str, *, timeout: float = 30) -> None:
        """Force a scheduler RPC now (clears backoffs) and wait until it has completed."""
        before = self.rpc_count()
        self.cmd("--project", master_url, "update")
        wait_until(lambda: self.rpc_count() > before, timeout=timeout, what="the forced RPC", client=self)

    def project_status(self) -> dict[str, str]:
        """``boinccmd --get_project_status`` of the (single) attached project as key: value."""
        out = self.cmd("--get_project_status").stdout
        values: dict[str, str] = {}
        for line in out.splitlines():
            key, sep, value = line.strip().partition(": ")
            if sep and key not in values:
                values[key] = value.strip()
        return values


@pytest.fixture
def boinc_binary() -> str:
    binary = require_service("COBBLESTONE_TEST_BOINC", "the BOINC client")
    return binary


@pytest.fixture
def boinc_client(boinc_binary: str) -> Iterator[Callable[[], BoincClient]]:
    """A factory of private clients; every one is stopped (by PID if need be) at teardown.

    Client directories live outside pytest's rotating tmp_path, which a concurrent pytest
    session may prune, and are removed afterwards.
    """
    boinccmd = shutil.which("boinccmd", path=str(Path(boinc_binary).parent)) or "boinccmd"
    root = Path(tempfile.mkdtemp(prefix="cobblestone-boinc-"))
    made: list[BoincClient] = []

    def make() -> BoincClient:
        client = BoincClient(binary=boinc_binary, boinccmd=boinccmd, dir=root / f"client{len(made)}")
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            client.stop()
        if not os.environ.get("COBBLESTONE_KEEP_BOINC_DIRS"):
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def base_url(live_server: Any, settings: Any) -> str:
    """The live server's URL with 127.0.0.1 as host; every project URL is built on it."""
    url = str(live_server.url).replace("://localhost:", "://127.0.0.1:")
    settings.COBBLESTONE_BASE_URL = url
    return url


# --- project builders ------------------------------------------------------------------

EMAIL = "volunteer@example.com"
PASSWORD = "secret-pw"


@dataclass
class E2EProject:
    project: Project
    account: Account
    app: App

    @property
    def master_url(self) -> str:
        return str(self.project.master_url)


def make_e2e_project(
    *, slug: str, script: Path = WORKER, app_name: str = "worker", version: bool = True, **app_fields: Any
) -> E2EProject:
    """A project with one app (signed with the project key), and a volunteer account."""
    project = project_create(slug=slug, name=f"E2E {slug}", request_delay=1).project
    app = app_create(project=project, name=app_name, user_friendly_name=f"E2E {app_name}", **app_fields)
    if version:
        app_version_add(
            project=project,
            app_name=app_name,
            version_num=100,
            platform_name=PLATFORM,
            files=[AppFileSpec(path=script)],
            api_version="7.20.0",
        )
    account = Account.objects.create(
        project=project,
        name="E2E volunteer",
        email_addr=EMAIL,
        passwd_hash=make_passwd_hash(passwd_hash(PASSWORD, EMAIL)),
    )
    return E2EProject(project=project, account=account, app=app)


def add_job(
    e2e: E2EProject,
    name: str,
    scratch: Path,
    *,
    command_line: str = "1",
    max_nbytes: int = 10_000,
    **job_fields: Any,
) -> Workunit:
    """One workunit: in.txt in, out.txt out (copy_file both ways, as a plain app needs)."""
    scratch.mkdir(parents=True, exist_ok=True)
    source = scratch / f"{name}_in.txt"
    source.write_text(f"input of {name}\n")
    job = JobSpec(
        name=name,
        inputs=(InputSpec(path=source, name=f"{name}_in.txt", open_name="in.txt"),),
        outputs=(OutputSpec(open_name="out.txt", max_nbytes=max_nbytes),),
        command_line=command_line,
        rsc_fpops_est=1e9,
        rsc_fpops_bound=1e12,
        **job_fields,
    )
    return workunit_create(project=e2e.project, app=e2e.app, job=job)
