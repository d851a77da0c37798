"""Database settings read from the environment (boincproj/settings.py), in a fresh interpreter."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# Reading a setting loads the settings module alone: what these tests check, at a fifth of the
# CPU time of django.setup(), which would load every app as well.
LOAD_SETTINGS = "from django.conf import settings; settings.DATABASES;"


def printed(code: str, **env: str) -> str:
    """The last line ``code`` prints in a fresh interpreter with the settings and ``env``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{LOAD_SETTINGS} {code}"],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "boincproj.settings", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


def database_options(**env: str) -> dict:
    code = "import json; from django.conf import settings; print(json.dumps(settings.DATABASES['default']['OPTIONS']))"
    return json.loads(printed(code, **env))


def test_postgresql_prepares_statements_by_default():
    options = database_options(DATABASE_URL="postgres://u@127.0.0.1:5432/db")
    assert options["server_side_binding"] is True
    assert options["prepare_threshold"] >= 1


def test_server_side_binding_can_be_turned_off_for_a_transaction_pooler():
    options = database_options(
        DATABASE_URL="postgres://u@127.0.0.1:5432/db", DATABASE_SERVER_SIDE_BINDING="false"
    )
    assert "server_side_binding" not in options
    assert "prepare_threshold" not in options


def test_postgresql_connections_keep_a_thousand_prepared_statements_by_default():
    code = "from django.conf import settings; print(settings.DATABASE_PREPARED_MAX)"
    assert printed(code, DATABASE_URL="postgres://u@h/db") == "1000"


def sqlite_pragma(name: str, **env: str) -> str:
    """What a connection made with the settings reports for an SQLite PRAGMA."""
    code = (
        "from django.db import connection; c = connection.cursor();"
        f" c.execute('PRAGMA {name}'); print(c.fetchone()[0])"
    )
    return printed(code, **env)


def test_sqlite_commits_are_flushed_at_checkpoints_by_default(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    assert sqlite_pragma("journal_mode", DATABASE_URL=url) == "wal"
    assert sqlite_pragma("synchronous", DATABASE_URL=url) == "1"  # NORMAL


def test_sqlite_can_flush_every_commit(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    assert sqlite_pragma("synchronous", DATABASE_URL=url, COBBLESTONE_SQLITE_SYNCHRONOUS="full") == "2"


def test_an_unknown_sqlite_synchronous_mode_is_refused(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", LOAD_SETTINGS],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "boincproj.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            "COBBLESTONE_SQLITE_SYNCHRONOUS": "OFF",
        },
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "COBBLESTONE_SQLITE_SYNCHRONOUS must be NORMAL or FULL" in out.stderr
