"""A WSGI app for the worker test: /hold waits until a file exists; /echo tells when it ran
and the X-Request-Start the server passed on."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    if environ["PATH_INFO"] == "/hold":
        release = Path(os.environ["ECHO_RELEASE_FILE"])
        deadline = time.monotonic() + 60
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    body = json.dumps({"handled": time.time(), "start": environ.get("HTTP_X_REQUEST_START")}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
