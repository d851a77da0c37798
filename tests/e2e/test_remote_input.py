"""A remote input with the stock client: the client downloads the file from the URL the
job names, on another server, checks it against the MD5 and size the server gave, and
runs the job on it; the project's download area never holds it."""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from apps.work.domain.states import Outcome, ServerState
from apps.work.models import OutputFile, Result
from apps.work.services import InputSpec, JobSpec, OutputSpec, RemoteFile, workunit_create
from tests.e2e.conftest import make_e2e_project, wait_until

pytestmark = [pytest.mark.boinc_client, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


class _QuietHandler(SimpleHTTPRequestHandler):
    requested: list[str] = []

    def log_message(self, format: str, *args: object) -> None:
        _QuietHandler.requested.append(self.path)


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Another web server (a data repository of the scientist's): its base URL and folder."""
    folder = tmp_path / "repository"
    folder.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


def test_the_client_downloads_a_remote_input_from_its_url_and_runs_the_job(boinc_client, base_url, elsewhere):
    host_url, folder = elsewhere
    data = os.urandom(200_000)
    (folder / "set-7.bin").write_bytes(data)
    md5 = hashlib.md5(data).hexdigest()
    e2e = make_e2e_project(slug="remotein", target_nresults=1, min_quorum=1)
    wu = workunit_create(
        project=e2e.project,
        app=e2e.app,
        job=JobSpec(
            name="remote1",
            inputs=(
                InputSpec(
                    name=f"jf_{md5}",
                    remote=RemoteFile(url=f"{host_url}/set-7.bin", md5=md5, nbytes=len(data)),
                    open_name="in.txt",
                ),
            ),
            outputs=(OutputSpec(open_name="out.txt", max_nbytes=10_000),),
            command_line="1",
            rsc_fpops_est=1e9,
            rsc_fpops_bound=1e12,
        ),
    )
    client = boinc_client()
    client.start("--attach_project", e2e.master_url, e2e.account.authenticator, ncpus=1)

    def reported() -> bool:
        return Result.objects.filter(workunit=wu, server_state=ServerState.OVER).exists()

    wait_until(reported, timeout=60, what="the job's report", client=client)
    result = Result.objects.get(workunit=wu)
    assert result.outcome == Outcome.SUCCESS
    assert "/set-7.bin" in _QuietHandler.requested
    assert not (e2e.project.download_dir / f"jf_{md5}").exists()
    # The client checks a download against the MD5 and size it was given before it runs the
    # job; the worker's output is one line: the size and MD5 of what it read.
    output = OutputFile.objects.get(result=result)
    assert (output.uploaded, output.nbytes) == (True, len(f"{len(data)} {md5}\n"))
