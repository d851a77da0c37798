"""Files with keys or account data are readable by their owner only whatever the umask: the
SQLite database as `make run` sets it up, an older database made readable by others, and a
code-signing private key written out by rotate_code_sign_key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management import call_command

from apps.projects.services import project_create
from tests.ops.test_backup import manage, modes

pytestmark = pytest.mark.slow

# Public by design: collectstatic's output (nginx serves it) and the task queue of the
# no-server broker (ids and ticks, no account data).
PUBLIC = ("static", "broker")


def run_env(root: Path) -> dict[str, str]:
    """`make run`'s environment: the default SQLite database under the var directory."""
    return {
        "PATH": os.environ["PATH"],
        "DEBUG": "true",
        "COBBLESTONE_DATA_DIR": str(root / "data"),
        "COBBLESTONE_VAR_DIR": str(root / "var"),
        "LOG_LEVEL": "WARNING",
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[dict[str, str], Path]:
    """A server set up as `make run` sets it up, before it starts the processes."""
    root = tmp_path_factory.mktemp("run")
    env = run_env(root)
    for command in (["migrate", "--noinput"], ["seed_demo", "--if-empty"], ["ensure_admin"]):
        manage(env, *command)
    return env, root / "var"


def test_make_runs_setup_leaves_nothing_private_readable_by_others(made):
    _, var = made
    found = {name: mode for name, mode in modes(var).items() if (var / name).is_file()}
    private = {name: mode for name, mode in found.items() if not name.startswith(PUBLIC)}
    assert {"cobblestone.sqlite3", "admin-password.txt"} <= set(private)
    assert private == {name: "0o600" for name in private}


def test_a_database_readable_by_others_is_made_private_at_the_next_command(made):
    env, var = made
    database = var / "cobblestone.sqlite3"
    database.chmod(0o644)
    manage(env, "showmigrations", "projects")
    assert oct(database.stat().st_mode & 0o777) == "0o600"


def test_a_private_key_written_out_by_rotation_is_readable_by_its_owner_only(tmp_path, db):
    created = project_create(slug="offline", name="Offline", keep_private_key=False)
    old_key, new_key = tmp_path / "old.key", tmp_path / "new.key"
    old_key.write_text(created.code_sign_private_key)
    umask = os.umask(0o022)
    try:
        call_command(
            "rotate_code_sign_key",
            "--project",
            "offline",
            "--old_private_key",
            str(old_key),
            "--new_private_key_out",
            str(new_key),
        )
    finally:
        os.umask(umask)
    assert oct(new_key.stat().st_mode & 0o777) == "0o600"
