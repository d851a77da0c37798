"""deploy/: the environment file names every setting, the nginx site and the units expand from it,
and `check --deploy` is clean with the documented production values."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from apps.benchmarks.stack import ENV_EXAMPLE, env_file_read, env_file_write, unit_commands
from apps.benchmarks.stack.units import BASE_DIR

DEPLOY = BASE_DIR / "deploy"
RENDER = DEPLOY / "render-nginx-site.sh"


def settings_read_from_environment() -> set[str]:
    source = (BASE_DIR / "boincproj" / "settings.py").read_text()
    return set(re.findall(r'\benv(?:_[a-z]+)?\(\s*"([A-Z][A-Z0-9_]*)"', source))


def test_the_example_names_every_setting():
    documented = set(env_file_read(ENV_EXAMPLE))
    missing = settings_read_from_environment() - documented
    assert missing == set()


def test_the_example_names_every_gunicorn_and_nginx_value():
    documented = set(env_file_read(ENV_EXAMPLE))
    gunicorn = set(re.findall(r'"(GUNICORN_[A-Z_]+)"', (DEPLOY / "gunicorn.conf.py").read_text()))
    nginx = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)\}", (DEPLOY / "nginx" / "cobblestone.conf").read_text()))
    assert gunicorn | nginx <= documented


def render(env_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", str(RENDER), str(env_file)], capture_output=True, text=True, check=False)


def test_the_nginx_site_limits_the_scheduler_to_what_django_reads():
    site = render(ENV_EXAMPLE).stdout
    cgi = site[site.index('location ~ "^/[a-z0-9][a-z0-9_-]*/cgi$"') :]
    limit = re.search(r"client_max_body_size (\d+);", cgi)
    assert limit is not None
    assert (
        int(limit.group(1))
        == int(env_file_read(ENV_EXAMPLE)["COBBLESTONE_MAX_REQUEST_BYTES"])
        == 2 * 1024 * 1024
    )


def test_the_nginx_site_serves_downloads_and_static_files_from_the_configured_places():
    site = render(ENV_EXAMPLE).stdout
    assert "root /var/lib/cobblestone/data;" in site
    assert "alias /var/lib/cobblestone/static/;" in site
    assert "server 127.0.0.1:8000;" in site
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in site  # nginx's own variables stay


def test_rendering_refuses_a_value_the_file_does_not_set(tmp_path):
    values = env_file_read(ENV_EXAMPLE)
    del values["NGINX_SERVER_NAME"]
    env_file_write(tmp_path / "cobblestone.env", values)
    done = render(tmp_path / "cobblestone.env")
    assert done.returncode == 1
    assert "NGINX_SERVER_NAME is not set" in done.stderr


def test_an_environment_file_value_must_be_a_shell_safe_word(tmp_path):
    with pytest.raises(ValueError, match="shell-safe"):
        env_file_write(tmp_path / "x.env", {"SECRET_KEY": "has $dollar"})


def test_the_units_run_collectstatic_gunicorn_celery_and_beat():
    env = env_file_read(ENV_EXAMPLE)
    web = unit_commands("cobblestone-web.service", env)
    bin_dir = str(Path(sys.executable).parent)
    assert web.pre == ((f"{bin_dir}/python", "manage.py", "collectstatic", "--noinput", "-v", "0"),)
    assert web.start == (f"{bin_dir}/gunicorn", "-c", "deploy/gunicorn.conf.py")
    worker = unit_commands("cobblestone-worker@.service", env, instance="2")
    assert worker.start[1:] == (
        "-A", "boincproj", "worker", "--loglevel", "INFO", "--concurrency", "2",
        "--hostname", "worker2@%h", "--without-mingle", "--without-gossip",
    )  # fmt: skip
    beat = unit_commands("cobblestone-beat.service", env)
    assert beat.pre[0][-1] == "setup_periodic_tasks"
    assert beat.start[1:4] == ("-A", "boincproj", "beat")


def manage_deployed(tmp_path: Path, *args: str, **changes: str) -> subprocess.CompletedProcess[str]:
    values = {**env_file_read(ENV_EXAMPLE), **changes}
    values.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        COBBLESTONE_VAR_DIR=str(tmp_path / "var"),
        COBBLESTONE_DATA_DIR=str(tmp_path / "data"),
    )
    env = {"PATH": os.environ["PATH"], **values}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def check_deploy(tmp_path: Path, **changes: str) -> subprocess.CompletedProcess[str]:
    return manage_deployed(tmp_path, "check", "--deploy", "--fail-level", "WARNING", **changes)


@pytest.mark.slow
def test_check_deploy_is_clean_with_the_documented_settings(tmp_path):
    key = secrets.token_urlsafe(50)
    # As the web unit does before gunicorn starts.
    assert manage_deployed(tmp_path, "collectstatic", "--noinput", "-v", "0", SECRET_KEY=key).returncode == 0
    done = check_deploy(tmp_path, SECRET_KEY=key)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "System check identified no issues (0 silenced)."


@pytest.mark.slow
def test_check_deploy_catches_the_placeholder_secret_key(tmp_path):
    done = check_deploy(tmp_path)  # SECRET_KEY=change-me, as in the example
    assert done.returncode == 1
    assert "security.W009" in done.stderr


@pytest.mark.slow
def test_check_deploy_names_collectstatic_when_it_has_not_run(tmp_path):
    done = check_deploy(tmp_path, SECRET_KEY=secrets.token_urlsafe(50))
    assert done.returncode == 1
    assert "ops.E001" in done.stderr
    assert "Run `manage.py collectstatic --noinput`" in done.stderr


def unit_setting(unit: str, key: str) -> str:
    lines = (DEPLOY / "systemd" / unit).read_text().splitlines()
    (value,) = (line.partition("=")[2] for line in lines if line.startswith(f"{key}="))
    return value


@pytest.mark.parametrize(
    "unit", ["cobblestone-web.service", "cobblestone-worker@.service", "cobblestone-beat.service"]
)
def test_stopping_a_unit_signals_its_main_process_and_kills_what_is_left_at_the_timeout(unit):
    assert unit_setting(unit, "KillMode") == "mixed"


def test_the_web_unit_waits_longer_than_gunicorn_waits_for_its_requests():
    graceful = re.search(r"^graceful_timeout = (\d+)$", (DEPLOY / "gunicorn.conf.py").read_text(), re.M)
    assert graceful is not None
    assert int(unit_setting("cobblestone-web.service", "TimeoutStopSec")) > int(graceful.group(1))


def test_the_worker_unit_waits_longer_than_a_pass_may_run():
    limit = int(env_file_read(ENV_EXAMPLE)["CELERY_TASK_TIME_LIMIT"])
    assert int(unit_setting("cobblestone-worker@.service", "TimeoutStopSec")) > limit


def test_the_backup_unit_runs_the_backup_command():
    backup = unit_commands("cobblestone-backup.service", env_file_read(ENV_EXAMPLE))
    assert backup.start == (f"{Path(sys.executable).parent}/python", "manage.py", "backup")


def requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[\[=<>~!; ]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_production_requirements_hold_no_test_or_lint_tool():
    production = requirement_names(BASE_DIR / "requirements.txt")
    development = requirement_names(BASE_DIR / "requirements-dev.txt")
    assert "pytest" in development
    assert production & development == set()
    assert {"pytest", "hypothesis", "playwright", "ruff", "import-linter", "coverage"} & production == set()
    assert "-r requirements.txt" in (BASE_DIR / "requirements-dev.txt").read_text().splitlines()
