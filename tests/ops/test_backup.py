"""backup and restore on SQLite, as an operator runs them (manage.py in a process of its own).

The PostgreSQL path (pg_dump, pg_restore) runs in the production drill (tests/production).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """manage.py with the umask a shell usually has (022: new files readable by everyone)."""
    done = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.umask(0o022),
    )
    if check and done.returncode != 0:
        pytest.fail(f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}")
    return done


def server_env(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{root / 'db.sqlite3'}",
        "COBBLESTONE_DATA_DIR": str(root / "data"),
        "COBBLESTONE_VAR_DIR": str(root / "var"),
        "LOG_LEVEL": "WARNING",
    }


def modes(root: Path) -> dict[str, str]:
    """Each file and directory under ``root`` (and ``root``) with its permission bits."""
    return {str(p.relative_to(root)): oct(p.stat().st_mode & 0o777) for p in [root, *root.rglob("*")]}


def project_keys(env: dict[str, str]) -> dict[str, str]:
    code = (
        "import json; from apps.projects.models import Project; p = Project.objects.get(slug='bk'); "
        "print(json.dumps({'public': p.code_sign_public_key, 'private': p.code_sign_private_key}))"
    )
    return json.loads(manage(env, "shell", "-c", code).stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> tuple[dict[str, str], Path]:
    """A server with one project and an input file, and a backup of it."""
    root = tmp_path_factory.mktemp("original")
    env = server_env(root)
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "make_project", "bk", "--name", "Backup test")
    manage(env, "add_app", "--project", "bk", "sim")
    source = root / "in.txt"
    source.write_text("input of job1\n")
    manage(env, "create_work", "--project", "bk", "--appname", "sim", "--wu_name", "job1", str(source))
    backup = root / "backup"
    done = manage(env, "backup", "--output", str(backup))
    assert done.stdout.strip() == str(backup)
    return env, backup


def test_a_backup_holds_the_database_the_data_and_the_keys(original):
    env, backup = original
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["engine"] == "sqlite"
    assert manifest["projects"] == ["bk"]
    assert set(manifest["files"]) == {
        "database.sqlite3",
        "data.tar",
        "keys/bk/code_sign_public",
        "keys/bk/code_sign_private",
        "keys/bk/upload_public",
        "keys/bk/upload_private",
    }
    assert (backup / "keys" / "bk" / "code_sign_private").read_text() == project_keys(env)["private"]


def test_restore_into_a_fresh_database_and_data_area(original, tmp_path):
    env, backup = original
    fresh = server_env(tmp_path)
    done = manage(fresh, "restore", str(backup))
    assert done.stdout == "Restored bk.\n"
    assert project_keys(fresh) == project_keys(env)
    restored = (tmp_path / "data" / "bk" / "download" / "in.txt").read_text()
    assert restored == "input of job1\n"
    assert manage(fresh, "migrate", "--check", check=False).returncode == 0


def test_a_backup_is_readable_by_its_owner_only(original):
    _, backup = original
    found = modes(backup)
    assert found == {name: "0o700" if (backup / name).is_dir() else "0o600" for name in found}


def test_the_database_is_readable_by_its_owner_only_after_migrate(original):
    env, _ = original
    database = Path(env["DATABASE_URL"].removeprefix("sqlite:///"))
    companions = [database, *database.parent.glob(database.name + "-*")]
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in companions} == {
        p.name: "0o600" for p in companions
    }


def test_a_restored_database_is_readable_by_its_owner_only(original, tmp_path):
    _, backup = original
    fresh = server_env(tmp_path)
    manage(fresh, "restore", str(backup))
    assert oct((tmp_path / "db.sqlite3").stat().st_mode & 0o777) == "0o600"


def test_restore_refuses_a_database_that_is_not_empty(original):
    env, backup = original
    done = manage(env, "restore", str(backup), check=False)
    assert done.returncode == 1
    assert "the database is not empty" in done.stderr


def test_restore_refuses_a_damaged_backup_and_writes_nothing(original, tmp_path):
    _, backup = original
    damaged = tmp_path / "damaged"
    subprocess.run(["cp", "-r", str(backup), str(damaged)], check=True)
    with (damaged / "data.tar").open("r+b") as handle:
        handle.seek(600)
        handle.write(b"X")
    fresh = server_env(tmp_path / "target")
    done = manage(fresh, "restore", str(damaged), check=False)
    assert done.returncode == 1
    assert "data.tar does not match its checksum" in done.stderr
    assert not (tmp_path / "target" / "data").exists()
    with sqlite3.connect(tmp_path / "target" / "db.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_backup_refuses_a_directory_that_is_not_empty(original):
    env, backup = original
    done = manage(env, "backup", "--output", str(backup), check=False)
    assert done.returncode == 1
    assert "exists and is not empty" in done.stderr
