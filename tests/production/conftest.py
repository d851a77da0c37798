"""The production stack for the end-to-end tests: nginx (TLS), gunicorn, PostgreSQL, Redis, a
Celery worker and beat, started by apps.benchmarks.stack from deploy/'s files, once for the whole
directory (PostgreSQL and Redis are private servers in the stack's directory). The fault
suite (test_faults.py) restarts and kills its parts and leaves every one running again.

Projects are installed with the operator's commands (make_project, add_app, add_app_version,
create_work) through ``Stack.manage``; the stock BOINC client reaches the server only through
nginx, over HTTPS, trusting the stack's certificate through ``ca-bundle.crt`` in its directory.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from apps.benchmarks.stack import Stack
from tests.conftest import require_service
from tests.e2e.conftest import PLATFORM, WORKER, BoincClient, boinc_binary, boinc_client  # noqa: F401

EMAIL = "volunteer@example.org"
PASSWORD = "volunteer-pw"
WU_TEMPLATE = """<input_template>
  <file_info><number>0</number></file_info>
  <workunit>
    <file_ref><file_number>0</file_number><open_name>in.txt</open_name><copy_file/></file_ref>
    <rsc_fpops_est>1e9</rsc_fpops_est>
    <rsc_fpops_bound>1e12</rsc_fpops_bound>
  </workunit>
</input_template>
"""
RESULT_TEMPLATE = """<output_template>
  <file_info><name><OUTFILE_0/></name><generated_locally/><upload_when_present/>
    <max_nbytes>10000</max_nbytes><url><UPLOAD_URL/></url></file_info>
  <result><file_ref><file_name><OUTFILE_0/></file_name><open_name>out.txt</open_name><copy_file/></file_ref></result>
</output_template>
"""


@pytest.fixture(scope="package")
def production_stack() -> Iterator[Stack]:
    """The stack, started once for every test module here: starting it takes a while."""
    require_service("COBBLESTONE_TEST_DATABASE_URL", "PostgreSQL")  # installed and able to run
    require_service("COBBLESTONE_TEST_REDIS_URL", "Redis")  # redis-server, which the stack runs
    nginx = require_service("COBBLESTONE_TEST_NGINX", "nginx")
    directory = Path(tempfile.mkdtemp(prefix="cobblestone-production-"))
    try:
        # A PostgreSQL server of its own: the stack's connections never compete with other
        # test runs for the shared server's, and the drill can drop its database freely.
        with Stack(directory, nginx=nginx) as running:
            yield running
    finally:
        if not os.environ.get("COBBLESTONE_KEEP_STACK_DIRS"):
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def stack(production_stack: Stack) -> Stack:
    """The stack, for tests that attach the stock BOINC client to it."""
    require_service("COBBLESTONE_TEST_BOINC", "the BOINC client")
    return production_stack


def sql(stack: Stack, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Read the stack's database directly (the assertions' view of what the server stored)."""
    with psycopg.connect(stack.env["DATABASE_URL"]) as conn:
        return list(conn.execute(query, params).fetchall())


def project_install(
    stack: Stack,
    slug: str,
    work: Path,
    app: str = "worker",
    *app_options: str,
    wu_template: str = WU_TEMPLATE,
) -> str:
    """A project with the demo worker program as ``app`` (``add_app``'s ``app_options``), as
    an operator sets it up, and the job templates in ``work``; its master URL."""
    stack.manage("make_project", slug, "--name", f"Production {slug}")
    stack.manage("add_app", "--project", slug, app, "--user_friendly_name", app.title(), *app_options)
    stack.manage(
        "add_app_version", "--project", slug, "--appname", app, "--version_num", "100",
        "--platform", PLATFORM, "--file", str(WORKER), "--api_version", "7.20.0",
    )  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    (work / "wu.xml").write_text(wu_template)
    (work / "result.xml").write_text(RESULT_TEMPLATE)
    return f"{stack.base_url}/{slug}/"


def job_create(stack: Stack, slug: str, name: str, work: Path, *, seconds: int = 1) -> Path:
    """One workunit (in.txt in, out.txt out) that runs for ``seconds``; its input file."""
    source = work / f"{name}_in.txt"
    source.write_text(f"input of {name}\n" * 50)
    stack.manage(
        "create_work", "--project", slug, "--appname", "worker", "--wu_name", name,
        "--wu_template", str(work / "wu.xml"), "--result_template", str(work / "result.xml"),
        "--command_line", str(seconds), str(source),
    )  # fmt: skip
    return source


def tls_client(stack: Stack, boinc_client: Any) -> BoincClient:  # noqa: F811
    """A BOINC client that trusts the stack's certificate (curl reads ca-bundle.crt)."""
    client = boinc_client()
    client.dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(stack.cert_path, client.dir / "ca-bundle.crt")
    return client


def volunteer_attach(client: BoincClient, master_url: str, email: str = EMAIL) -> str:
    """Create an account from the client (the project's web RPC) and attach; the account key."""
    created = client.cmd("--create_account", master_url, email, PASSWORD, "Volunteer").stdout
    match = re.search(r"account key: (\w+)", created)
    assert match, created
    client.cmd("--project_attach", master_url, match.group(1))
    return match.group(1)
