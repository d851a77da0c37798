"""The container stack of deploy/container/ end to end, on a Docker engine: the images built
(their base made here from Debian's packages: base images cannot be pulled on these machines),
the compose stack started with TLS, the stock BOINC client attached through nginx and granted
credit, a backup taken from a container, and the data kept across `compose down` and `up`.

Where no Docker engine answers (`docker info` fails) the module is skipped with that reason.
Under CI that is a failure only when an engine could have answered: `dockerd` is installed
and its socket /var/run/docker.sock exists. Once the engine answers, anything that goes wrong
(the base image, a build, the stack) is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.benchmarks.stack.tls import self_signed_certificate
from apps.benchmarks.stack.units import BASE_DIR
from apps.work.domain.states import ServerState
from tests.conftest import require_service
from tests.e2e.conftest import boinc_binary, boinc_client, free_port, wait_until  # noqa: F401
from tests.production.conftest import job_create, project_install, volunteer_attach

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.boinc_client]

COMPOSE = BASE_DIR / "deploy" / "container" / "compose.yml"
DOCKERFILE = BASE_DIR / "deploy" / "container" / "Dockerfile"
BASE_TAG = "cobblestone-test-base:bookworm"
# Everything the stack's images install, so that their builds find it already there.
BASE_PACKAGES = (
    "python3,python3-venv,ca-certificates,postgresql,postgresql-client,redis-server,nginx-light,gettext-base"
)
POSTGRES_START = r"""#!/bin/sh
# The official postgres image's contract, enough for the stack: POSTGRES_USER, _PASSWORD, _DB.
set -eu
data=/var/lib/postgresql/data
bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
mkdir -p "$data" && chown postgres:postgres "$data"
if [ ! -f "$data/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pw && chown postgres /tmp/pw
    runuser -u postgres -- "$bin/initdb" -D "$data" -U "$POSTGRES_USER" --pwfile=/tmp/pw \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8
    rm /tmp/pw
    echo "host all all 0.0.0.0/0 scram-sha-256" >> "$data/pg_hba.conf"
    runuser -u postgres -- "$bin/pg_ctl" -D "$data" -w -o "-c listen_addresses= -k /tmp" start
    runuser -u postgres -- createdb -h /tmp -U "$POSTGRES_USER" "$POSTGRES_DB"
    runuser -u postgres -- "$bin/pg_ctl" -D "$data" -w stop
fi
exec runuser -u postgres -- "$bin/postgres" -D "$data" -c listen_addresses='*' -k /tmp
"""


def docker(
    *args: str, check: bool = True, timeout: float = 1800, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=check, timeout=timeout, **kwargs
    )


def engine_required() -> None:
    """Skip without an engine; under CI, fail when one was installed and should have answered."""
    if shutil.which("docker") and docker("info", check=False, timeout=60).returncode == 0:
        return
    could = shutil.which("dockerd") is not None and Path("/var/run/docker.sock").exists()
    reason = "no Docker engine answers `docker info` (the container test needs one; see docs/deployment.md)"
    if os.environ.get("CI") and could:
        pytest.fail(f"{reason}, though dockerd is installed and /var/run/docker.sock exists")
    pytest.skip(reason)


def debian_mirror() -> str:
    for source in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if not source.is_file():
            continue
        for line in source.read_text().splitlines():
            words = line.split()
            if words[:1] == ["deb"] and "security" not in line:
                return next(w for w in words[1:] if "://" in w)
            if words[:1] == ["URIs:"] and "security" not in line:
                return words[1]
    return "http://deb.debian.org/debian"


def base_image(work: Path) -> str:
    """A bookworm image from Debian's packages (debootstrap, then docker import), made once."""
    if os.environ.get("COBBLESTONE_TEST_DOCKER_BASE"):
        return os.environ["COBBLESTONE_TEST_DOCKER_BASE"]
    if docker("image", "inspect", BASE_TAG, check=False).returncode == 0:
        return BASE_TAG
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        pytest.fail(
            "debootstrap (as root) is needed to make the base image, or set COBBLESTONE_TEST_DOCKER_BASE"
        )
    root = work / "rootfs"
    subprocess.run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={BASE_PACKAGES}",
            "bookworm",
            str(root),
            debian_mirror(),
        ],
        check=True,
        capture_output=True,
        timeout=1800,
    )
    tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(["docker", "import", "-", BASE_TAG], stdin=tar.stdout, check=True, capture_output=True)
    tar.wait()
    shutil.rmtree(root, ignore_errors=True)
    return BASE_TAG


def default_route_mtu() -> str:
    """The MTU of the interface of the default route: the stack's network must not exceed it."""
    for line in Path("/proc/net/route").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":
            return Path(f"/sys/class/net/{fields[0]}/mtu").read_text().strip()
    return "1500"


def build(base: str, target: str, tag: str, context: Path = BASE_DIR, dockerfile: Path = DOCKERFILE) -> None:
    args = [
        "build",
        "--network",
        "host",
        "-f",
        str(dockerfile),
        "--build-arg",
        f"BASE_IMAGE={base}",
        "-t",
        tag,
    ]
    if target:
        args += ["--target", target]
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if ca.exists():  # this machine's own CA certificates, mounted for one step, never stored
        args += ["--secret", f"id=ca_certificates,src={ca}"]
    docker(*args, str(context), env={**os.environ, "DOCKER_BUILDKIT": "1"})


class ComposeStack:
    """The compose project, and what production's helpers ask of a stack (manage, base_url)."""

    def __init__(self, work: Path, env: dict[str, str]) -> None:
        self.work = work
        self.env = env
        self.name = f"cobblestonetest{uuid.uuid4().hex[:8]}"
        self.files = [COMPOSE]
        plugin = docker("compose", "version", check=False).returncode == 0
        self.command = ["docker", "compose"] if plugin else ["docker-compose"]

    @property
    def base_url(self) -> str:
        return self.env["COBBLESTONE_BASE_URL"]

    @property
    def cert_path(self) -> Path:
        return Path(self.env["TLS_DIR"]) / "fullchain.pem"

    def compose(
        self, *args: str, check: bool = True, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.command, "-p", self.name, *(f"--file={path}" for path in self.files), *args],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def container(self, service: str) -> str:
        return self.compose("ps", "-q", service).stdout.split()[0]

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """manage.py in the web container; a file of this machine named in ``args`` is copied in."""
        web = self.container("web")
        inside = []
        for arg in args:
            if arg.startswith("/") and Path(arg).is_file():
                target = f"/tmp/{uuid.uuid4().hex[:8]}-{Path(arg).name}"
                docker("cp", arg, f"{web}:{target}")
                arg = target
            inside.append(arg)
        return self.compose("exec", "-T", "web", "python", "manage.py", *inside, check=check)

    def sql(self, query: str) -> str:
        done = self.compose(
            "exec", "-T", "postgres", "psql", "-h", "/tmp", "-U", "cobblestone", "-tAc", query
        )
        return done.stdout.strip()

    def healthy(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.cert_path))
        try:
            with urllib.request.urlopen(f"{self.base_url}/health/", context=context, timeout=10) as response:
                return json.load(response) == {"status": "healthy"}
        except OSError:
            return False

    def wait_healthy(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not self.healthy():
            if time.monotonic() > deadline:
                logs = self.compose("logs", "--tail", "40", check=False).stdout
                pytest.fail(f"the stack is not healthy after {timeout:g} s:\n{logs}")
            time.sleep(3)


@pytest.fixture(scope="module")
def compose_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeStack]:
    engine_required()
    work = tmp_path_factory.mktemp("containers")
    base = base_image(work)
    build(base, "app", "cobblestone-test:app")
    build(base, "nginx", "cobblestone-test:nginx")
    (work / "postgres").mkdir()
    (work / "postgres" / "start.sh").write_text(POSTGRES_START)
    (work / "postgres" / "Dockerfile").write_text(
        'ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nCOPY start.sh /start.sh\nRUN chmod +x /start.sh\nCMD ["/start.sh"]\n'
    )
    build(base, "", "cobblestone-test:postgres", work / "postgres", work / "postgres" / "Dockerfile")
    tls = work / "tls"
    cert, key = self_signed_certificate(tls)
    cert.rename(tls / "fullchain.pem")
    key.rename(tls / "privkey.pem")
    os.chmod(tls / "privkey.pem", 0o644)  # read by nginx's master in the container
    https = free_port()
    base_url = f"https://127.0.0.1:{https}"
    stack = ComposeStack(
        work,
        {
            "COBBLESTONE_IMAGE": "cobblestone-test:app",
            "COBBLESTONE_NGINX_IMAGE": "cobblestone-test:nginx",
            "POSTGRES_IMAGE": "cobblestone-test:postgres",
            "REDIS_IMAGE": base,
            "SECRET_KEY": uuid.uuid4().hex * 2,
            "ALLOWED_HOSTS": "127.0.0.1",
            "CSRF_TRUSTED_ORIGINS": base_url,
            "COBBLESTONE_BASE_URL": base_url,
            "POSTGRES_PASSWORD": uuid.uuid4().hex,
            "HTTP_PORT": str(free_port()),
            "HTTPS_PORT": str(https),
            "TLS_DIR": str(tls),
            "COBBLESTONE_MTU": default_route_mtu(),
            "COBBLESTONE_SUBNET": "172.29.0.0/16",
            "GUNICORN_WORKERS": "2",
        },
    )
    # The stand-in Redis: Debian's server from the base image, reachable in the stack's network.
    override = work / "redis.override.yml"
    override.write_text(
        'version: "3.8"\nservices:\n  redis:\n'
        '    command: ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", ""]\n'
    )
    stack.files.append(override)
    try:
        stack.compose("up", "-d", "--no-build")
        stack.wait_healthy()
        yield stack
    finally:
        stack.compose("down", "-v", "--remove-orphans", check=False)


def credit_of(stack: ComposeStack, name: str) -> tuple[int, float]:
    row = stack.sql(f"SELECT server_state, granted_credit FROM work_result WHERE name = '{name}'")
    if not row:
        return (0, 0.0)
    state, credit = row.split("|")
    return (int(state), float(credit))


def test_the_stock_client_is_credited_through_nginx_and_the_data_outlives_down_and_up(
    compose_stack: ComposeStack,
    boinc_client: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    require_service("COBBLESTONE_TEST_BOINC", "the BOINC client")
    stack = compose_stack
    master_url = project_install(stack, "box", tmp_path)  # type: ignore[arg-type]
    job_create(stack, "box", "boxjob", tmp_path)  # type: ignore[arg-type]
    client = boinc_client()
    client.dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(stack.cert_path, client.dir / "ca-bundle.crt")
    client.start()
    volunteer_attach(client, master_url)
    wait_until(
        lambda: credit_of(stack, "boxjob_0")[1] > 0, timeout=240, what="credit for boxjob_0", client=client
    )
    client.stop()
    assert credit_of(stack, "boxjob_0")[0] == ServerState.OVER

    backup = stack.manage("backup")
    assert "cobblestone-" in backup.stdout + backup.stderr
    stored = stack.compose("exec", "-T", "web", "ls", "/var/lib/cobblestone/backups").stdout.split()
    assert len(stored) == 1

    stack.compose("down")
    stack.compose("up", "-d", "--no-build")
    stack.wait_healthy()
    assert credit_of(stack, "boxjob_0")[1] > 0
    assert stack.compose("exec", "-T", "web", "ls", "/var/lib/cobblestone/backups").stdout.split() == stored
    assert stack.compose("exec", "-T", "web", "ls", "/var/lib/cobblestone/data/box/download").stdout.split()
