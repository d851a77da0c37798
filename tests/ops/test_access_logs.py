"""Access logs keep no account key or password hash: gunicorn with deploy/gunicorn.conf.py (as
the web unit and runall start it) and nginx with the site deploy/render-nginx-site.sh writes,
each answering real requests on a loopback port."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.benchmarks.stack import ENV_EXAMPLE, env_file_read, env_file_write, free_port, port_open
from apps.benchmarks.stack.tls import self_signed_certificate
from apps.benchmarks.stack.units import BASE_DIR
from tests.conftest import require_service

pytestmark = pytest.mark.slow

KEY = "0123456789abcdef0123456789abcdef"
HASH = "5f4dcc3b5aa765d61d8327deb882cf99"
SECRET_QUERIES = [
    f"/ops/am_get_info.php?account_key={KEY}",
    f"/ops/lookup_account.php?email_addr=a%40example.org&passwd_hash={HASH}&get_opaque_auth=1",
    f"/ops/show_user.php?authenticator={KEY}&format=xml",
    f"/ops/show_user.php?format=xml&auth={KEY}",
    f"/ops/account/?auth_str={KEY}",
    f"/ops/notices.php?userid=5&auth=5_{KEY}",
    f"/ops/am_get_info.php?Account%5FKey={KEY}",
    f"/ops/am_get_info.php?account_key={KEY}&account_key={KEY}1&account_key={KEY}2&account_key={KEY}3",
]


def get(url: str, context: ssl.SSLContext | None = None, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def wait_for(ready, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, f"{what} exited"
        assert time.monotonic() < deadline, f"{what} did not start"
        time.sleep(0.1)


def wait_for_lines(log: Path, count: int) -> str:
    deadline = time.monotonic() + 10
    while (text := log.read_text() if log.exists() else "").count("\n") < count:
        assert time.monotonic() < deadline, f"{log} has {text.count(chr(10))} lines, not {count}"
        time.sleep(0.1)
    return text


def masked_log(log: Path) -> str:
    """The log of SECRET_QUERIES, checked to hold none of their secrets but the rest of each URL."""
    text = wait_for_lines(log, len(SECRET_QUERIES))
    assert KEY not in text
    assert HASH not in text
    assert "GET /ops/am_get_info.php?account_key=*** HTTP/1.1" in text
    assert "email_addr=a%40example.org&passwd_hash=***&get_opaque_auth=1" in text
    assert "show_user.php?format=xml&auth=*** " in text
    assert "GET /ops/notices.php?userid=5&auth=*** " in text
    return text


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    port, log = free_port(), tmp_path / "access.log"
    command = [sys.executable, "-m", "gunicorn", "-c", str(BASE_DIR / "deploy" / "gunicorn.conf.py")]
    command += ["tests.core.wsgi_echo:app", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    command += ["--access-logfile", str(log)]
    env = {**os.environ, "COBBLESTONE_VAR_DIR": str(tmp_path), "PYTHONPATH": str(BASE_DIR)}
    proc = subprocess.Popen(
        command, cwd=BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: port_open(port), "gunicorn", proc)
        yield port, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_gunicorn_logs_account_keys_and_password_hashes_as_stars(gunicorn):
    port, log = gunicorn
    for path in SECRET_QUERIES:
        get(f"http://127.0.0.1:{port}{path}", headers={"Referer": f"https://example.org/x?account_key={KEY}"})
    assert '"https://example.org/x?account_key=***"' in masked_log(log)


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[tuple[int, int, Path, ssl.SSLContext]]:
    binary = require_service("COBBLESTONE_TEST_NGINX", "nginx")
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    cert, key = self_signed_certificate(tmp_path)
    http, https, log = free_port(), free_port(), prefix / "access.log"
    env_file = tmp_path / "cobblestone.env"
    env_file_write(
        env_file,
        {
            **env_file_read(ENV_EXAMPLE),
            "GUNICORN_BIND": f"127.0.0.1:{free_port()}",  # nothing listens: nginx answers 502
            "NGINX_SERVER_NAME": "127.0.0.1",
            "NGINX_LISTEN_HTTP": f"127.0.0.1:{http}",
            "NGINX_LISTEN_HTTPS": f"127.0.0.1:{https}",
            "NGINX_TLS_CERTIFICATE": str(cert),
            "NGINX_TLS_CERTIFICATE_KEY": str(key),
            "NGINX_ACCESS_LOG": str(log),
        },
    )
    site = subprocess.run(
        ["sh", str(BASE_DIR / "deploy" / "render-nginx-site.sh"), str(env_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (prefix / "site.conf").write_text(site)
    # Debian's main configuration in short: the site included in http {}, which logs to a
    # file of its own so that only the site's access_log can hold the masked lines.
    (prefix / "nginx.conf").write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\n"
        "events { worker_connections 64; }\nhttp {\n  include /etc/nginx/mime.types;\n"
        f"  access_log {prefix}/default.log;\n"
        + "".join(f"  {kind}_temp_path {prefix}/tmp-{kind};\n" for kind in ("client_body", "proxy"))
        + f"  include {prefix}/site.conf;\n}}\n"
    )
    command = [binary, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(prefix / "nginx.conf")]
    proc = subprocess.Popen(command, cwd=prefix, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: port_open(https) and port_open(http), "nginx", proc)
        yield http, https, log, ssl.create_default_context(cafile=str(cert))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_nginx_logs_account_keys_and_password_hashes_as_stars(nginx):
    _, https, log, context = nginx
    referer = {"Referer": f"https://example.org/x?passwd_hash={HASH}"}
    for path in SECRET_QUERIES:
        assert get(f"https://127.0.0.1:{https}{path}", context, referer) == 502
    assert '"https://example.org/x?***"' in masked_log(log)


def test_nginx_masks_the_plain_http_redirect_too(nginx):
    http, _, log, _ = nginx
    request = urllib.request.Request(f"http://127.0.0.1:{http}/ops/am_get_info.php?account_key={KEY}")
    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(request, timeout=30)
    assert answer.value.code == 301
    text = wait_for_lines(log, 1)
    assert KEY not in text
    assert "account_key=***" in text


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
