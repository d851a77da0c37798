"""Fixtures of the cross-project normalization, stats export and credit admin tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.factories import AppFactory, AppVersionFactory, PlatformFactory, ProjectFactory


class ExportServer:
    """A loopback HTTP server standing in for other projects: path -> (status, body)."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, bytes]] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, body = pages.get(self.path, (404, b"not found"))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def export_server() -> Iterator[ExportServer]:
    server = ExportServer()
    yield server
    server.close()


@pytest.fixture
def linux():
    return PlatformFactory(name="x86_64-pc-linux-gnu")


@pytest.fixture
def mixed_app(linux):
    """Project "mixed": an app with a CPU version and a cuda version, both normalized by the
    feeder (the GPU version is ten times less efficient: pfc_scale 0.1)."""
    app = AppFactory(project=ProjectFactory(slug="mixed"), name="sim")
    AppVersionFactory(app=app, platform=linux, version_num=100, expavg_credit=1000.0, pfc_scale=1.0)
    AppVersionFactory(
        app=app,
        platform=linux,
        version_num=100,
        plan_class="cuda",
        proc_type="NVIDIA",
        gpu_usage=1,
        expavg_credit=3000.0,
        pfc_scale=0.1,
    )
    return app


@pytest.fixture
def gpu_only_app(linux):
    """Project "gpuonly": an app with only a cuda version, above the sample threshold."""
    app = AppFactory(project=ProjectFactory(slug="gpuonly"), name="gpuapp")
    AppVersionFactory(
        app=app,
        platform=linux,
        version_num=200,
        plan_class="cuda",
        proc_type="NVIDIA",
        gpu_usage=1,
        pfc_n=200,
        pfc_avg=2.0,
        expavg_credit=50.0,
    )
    return app
