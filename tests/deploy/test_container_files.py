"""deploy/container/ without a Docker engine: the compose file's shape and settings, the
Dockerfile's rules, the nginx image's site, and the production requirements the image installs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from apps.benchmarks.stack.tls import self_signed_certificate
from apps.benchmarks.stack.units import BASE_DIR

CONTAINER = BASE_DIR / "deploy" / "container"
COMPOSE = CONTAINER / "compose.yml"
DOCKERFILE = CONTAINER / "Dockerfile"
CONFIGURATION = BASE_DIR / "docs" / "configuration.md"
# What a shell needs to expand the file's ${...:?} values (compose refuses to start without them).
COMPOSE_VALUES = {
    "SECRET_KEY": "x" * 50,
    "ALLOWED_HOSTS": "boinc.example.org",
    "COBBLESTONE_BASE_URL": "https://boinc.example.org",
    "POSTGRES_PASSWORD": "change-me",
}
COMPILERS = ("gcc", "g++", "cpp", "clang", "make", "build-essential", "python3-dev", "libpq-dev")


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def documented_names() -> set[str]:
    return set(re.findall(r"`([A-Z][A-Z0-9_]+)`", CONFIGURATION.read_text()))


def dockerfile_stages() -> dict[str, list[str]]:
    """Each stage's instructions (continuation lines joined), by the stage's name."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    stages: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found = re.match(r"FROM\s+(\S+)(?:\s+AS\s+(\S+))?", line, re.IGNORECASE)
        if found:
            current = found.group(2) or found.group(1)
            stages[current] = []
        stages[current].append(line)
    return stages


def test_the_compose_file_is_version_3_with_the_whole_stack():
    stack = compose()
    assert stack["version"].startswith("3.")
    assert set(stack["services"]) == {"postgres", "redis", "web", "worker", "beat", "nginx"}
    assert set(stack["volumes"]) == {"database", "data", "backups"}


def test_the_compose_file_uses_no_key_compose_1_29_cannot_read():
    # Compose v2 (the compose specification) alone reads these in a service.
    v2_only = {"profiles", "develop", "models", "provider", "post_start", "pre_stop", "gpus"}
    for name, service in compose()["services"].items():
        assert v2_only.isdisjoint(service), name
        assert isinstance(service.get("depends_on", []), list), f"{name}: depends_on conditions"
        assert "secrets" not in service.get("build", {}), f"{name}: build secrets"


def test_every_service_environment_names_a_documented_setting():
    documented = documented_names()
    for name, service in compose()["services"].items():
        undocumented = set(service.get("environment", {})) - documented
        assert undocumented == set(), name


def test_the_app_services_keep_the_data_area_and_backups_in_named_volumes():
    services = compose()["services"]
    for name in ("web", "worker", "beat"):
        assert services[name]["volumes"] == [
            "data:/var/lib/cobblestone/data",
            "backups:/var/lib/cobblestone/backups",
        ]
        assert services[name]["environment"]["COBBLESTONE_DATA_DIR"] == "/var/lib/cobblestone/data"
    assert services["postgres"]["volumes"] == ["database:/var/lib/postgresql/data"]


def test_only_the_web_service_migrates():
    services = compose()["services"]
    assert services["web"]["environment"]["COBBLESTONE_MIGRATE"] == "true"
    assert "COBBLESTONE_MIGRATE" not in services["worker"]["environment"]
    assert [services[name]["command"] for name in ("web", "worker", "beat")] == [
        ["web"],
        ["worker"],
        ["beat"],
    ]


@pytest.mark.skipif(
    shutil.which("docker-compose") is None, reason="docker-compose (Debian's 1.29) not installed"
)
def test_docker_compose_1_29_reads_the_file():
    done = subprocess.run(
        ["docker-compose", "-f", str(COMPOSE), "config", "-q"],
        env={**os.environ, **COMPOSE_VALUES},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_dockerfile_takes_its_base_image_as_a_build_argument():
    stages = dockerfile_stages()
    assert stages[""] == ["ARG BASE_IMAGE"]
    assert {lines[0] for name, lines in stages.items() if name} == {
        "FROM ${BASE_IMAGE} AS build",
        "FROM ${BASE_IMAGE} AS app",
        "FROM ${BASE_IMAGE} AS nginx",
    }


def test_the_app_image_runs_as_a_user_other_than_root():
    users = [line.split()[1] for line in dockerfile_stages()["app"] if line.startswith("USER ")]
    assert users
    assert users[-1] not in {"root", "0", "0:0"}


def test_static_files_are_collected_at_build():
    assert any("manage.py collectstatic" in line for line in dockerfile_stages()["build"])


def test_no_compiler_is_installed_in_a_final_image():
    for stage in ("app", "nginx"):
        installs = " ".join(line for line in dockerfile_stages()[stage] if "apt-get install" in line)
        assert [c for c in COMPILERS if re.search(rf"(?<![\w.-]){re.escape(c)}(?![\w.-])", installs)] == []


def test_ca_certificates_reach_the_build_only_as_a_secret():
    text = DOCKERFILE.read_text()
    for line in (line for lines in dockerfile_stages().values() for line in lines):
        if "ca_certificates" in line or "CERT" in line:
            assert line.startswith("RUN --mount=type=secret,id=ca_certificates "), line
    assert not re.search(r"^(COPY|ADD)\s.*(\.crt|\.pem)", text, re.MULTILINE)


def test_the_entrypoint_and_the_nginx_start_are_executable_shell_scripts():
    for script in ("entrypoint.sh", "nginx-start.sh"):
        path = CONTAINER / script
        assert os.access(path, os.X_OK), script
        assert subprocess.run(["sh", "-n", str(path)], check=False).returncode == 0


def nginx_site(tmp_path: Path, *, tls: bool) -> str:
    environment = {
        name: str(value)
        for name, value in compose()["services"]["nginx"]["environment"].items()
        if "${" not in str(value)
    }
    environment.update(
        NGINX_SERVER_NAME="boinc.example.org",
        NGINX_MAX_UPLOAD_SIZE="256m",
        NGINX_ACCESS_LOG=str(tmp_path / "access.log"),
        COBBLESTONE_MAX_REQUEST_BYTES="2097152",
        GUNICORN_BIND="127.0.0.1:8000",
        NGINX_LISTEN_HTTP="18080",
        NGINX_LISTEN_HTTPS="18443",
        PATH=os.environ["PATH"],
    )
    if tls:
        cert, key = self_signed_certificate(tmp_path / "tls")
        environment.update(NGINX_TLS_CERTIFICATE=str(cert), NGINX_TLS_CERTIFICATE_KEY=str(key))
    done = subprocess.run(
        ["sh", str(CONTAINER / "nginx-start.sh"), "--print-site"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_without_a_certificate_the_site_is_plain_http_on_one_port(tmp_path):
    site = nginx_site(tmp_path, tls=False)
    assert re.findall(r"^\s*listen (.*);", site, re.MULTILINE) == ["18080"]
    assert "ssl_" not in site
    assert "return 301 https" not in site
    assert "root /var/lib/cobblestone/data;" in site


def test_with_a_certificate_the_site_is_the_debian_one(tmp_path):
    site = nginx_site(tmp_path, tls=True)
    assert re.findall(r"^\s*listen (.*);", site, re.MULTILINE) == ["18080", "18443 ssl http2"]
    assert f"ssl_certificate {tmp_path / 'tls'}/" in site


@pytest.mark.parametrize("tls", [False, True], ids=["plain_http", "tls"])
def test_nginx_accepts_the_site(tmp_path, tls):
    nginx = os.environ.get("COBBLESTONE_TEST_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        pytest.skip("nginx not installed (.ci/services.sh installs it)")
    (tmp_path / "site.conf").write_text(nginx_site(tmp_path, tls=tls))
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n include {tmp_path}/site.conf;\n}}\n"
    )
    done = subprocess.run(
        [nginx, "-t", "-q", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def production_requirements() -> set[str]:
    """The names the image installs: requirements.txt (production's file)."""
    text = (BASE_DIR / "requirements.txt").read_text()
    return {
        re.split(r"[\[=<>~ ]", line)[0].lower() for line in text.splitlines() if line and line[0].isalnum()
    }


def test_the_production_requirements_name_what_the_redis_transport_imports():
    # kombu's Redis transport imports packaging without declaring it: an image with only the
    # production requirements could not start a worker.
    assert "packaging" in production_requirements()


def engine_absent(monkeypatch: pytest.MonkeyPatch, *, dockerd: bool, socket: bool, ci: bool) -> None:
    from tests.deploy import test_container_stack as container_test

    monkeypatch.setattr(container_test, "docker", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", ""))
    monkeypatch.setattr(container_test.shutil, "which", lambda name: f"/usr/bin/{name}" if dockerd else None)
    monkeypatch.setattr(container_test.Path, "exists", lambda self: socket)
    if ci:
        monkeypatch.setenv("CI", "1")
    else:
        monkeypatch.delenv("CI", raising=False)


def test_without_an_engine_the_container_test_is_skipped_with_the_reason(monkeypatch):
    from tests.deploy.test_container_stack import engine_required

    engine_absent(monkeypatch, dockerd=True, socket=True, ci=False)
    with pytest.raises(pytest.skip.Exception, match="no Docker engine answers `docker info`"):
        engine_required()


def test_under_ci_a_missing_engine_is_skipped_when_none_was_installed(monkeypatch):
    from tests.deploy.test_container_stack import engine_required

    engine_absent(monkeypatch, dockerd=False, socket=False, ci=True)
    with pytest.raises(pytest.skip.Exception):
        engine_required()


def test_under_ci_an_installed_engine_that_does_not_answer_fails(monkeypatch):
    from tests.deploy.test_container_stack import engine_required

    engine_absent(monkeypatch, dockerd=True, socket=True, ci=True)
    with pytest.raises(
        pytest.fail.Exception, match=re.escape("dockerd is installed and /var/run/docker.sock exists")
    ):
        engine_required()
