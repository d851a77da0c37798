"""backup on the test database itself (SQLite's backup API, or pg_dump in the PostgreSQL pass)."""

from __future__ import annotations

import json
import os
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from apps.projects.services import project_create

pytestmark = pytest.mark.django_db(transaction=True)


def test_backup_writes_the_database_the_keys_and_a_manifest(tmp_path, settings):
    project_create(slug="inproc", name="In process")
    (settings.COBBLESTONE_DATA_DIR / "inproc" / "download" / "input.dat").write_bytes(b"x" * 100)
    output = tmp_path / "backup"
    err = StringIO()
    call_command("backup", "--output", str(output), stdout=StringIO(), stderr=err)
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["engine"] == connection.vendor
    assert manifest["projects"] == ["inproc"]
    assert manifest["database"] in manifest["files"]
    assert manifest["files"]["data.tar"]["bytes"] > 100
    assert "keys/inproc/code_sign_private" in manifest["files"]
    assert "backup complete: 6 file(s)" in err.getvalue()


def test_backup_without_data_leaves_the_data_areas_out(tmp_path):
    project_create(slug="inproc", name="In process")
    output = tmp_path / "backup"
    call_command("backup", "--output", str(output), "--no-data", stdout=StringIO(), stderr=StringIO())
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["data"] is None
    assert "data.tar" not in manifest["files"]


def test_the_database_copy_is_readable_by_its_owner_only_under_a_permissive_umask(tmp_path):
    project_create(slug="inproc", name="In process")
    output = tmp_path / "backup"
    umask = os.umask(0o022)
    try:
        call_command("backup", "--output", str(output), "--no-data", stdout=StringIO(), stderr=StringIO())
    finally:
        os.umask(umask)
    database = json.loads((output / "manifest.json").read_text())["database"]
    assert oct((output / database).stat().st_mode & 0o777) == "0o600"
    assert oct(output.stat().st_mode & 0o777) == "0o700"


def test_restore_refuses_a_directory_that_is_not_a_backup(tmp_path):
    with pytest.raises(CommandError, match="is not a backup"):
        call_command("restore", str(tmp_path), stderr=StringIO())
