"""What import_boinc refuses before it writes anything: a schema or db_revision it does not
know, a project directory without keys, a project it did not make, a database it cannot
log in to. These do not depend on Cobblestone's database engine, so they run once, in the
SQLite pass."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command

from apps.projects.models import Project
from apps.volunteers.models import Account
from tests.boinc_import.boinc_db import BoincDb
from tests.boinc_import.conftest import import_boinc
from tests.factories import ProjectFactory

pytestmark = [pytest.mark.django_db, pytest.mark.mysql, pytest.mark.slow]


def test_an_unknown_schema_is_refused_with_the_missing_columns(boinc_server, project_dir):
    db = BoincDb(boinc_server)
    try:
        db.execute("ALTER TABLE host DROP COLUMN gpu_active_frac")
        db.execute("DROP TABLE consent")
        with pytest.raises(CommandError, match="not a BOINC database schema the importer knows") as raised:
            import_boinc(db, project_dir)
    finally:
        db.drop()
    assert "table host lacks column(s) gpu_active_frac" in str(raised.value)
    assert "table consent is missing" in str(raised.value)
    assert not Project.objects.exists()


def test_a_db_revision_newer_than_known_is_refused(boinc_db, project_dir):
    (project_dir / "db_revision").write_text("27040\n")
    with pytest.raises(CommandError, match="db_revision 27040 is newer than 27032"):
        import_boinc(boinc_db, project_dir)


def test_a_project_dir_without_keys_is_refused(boinc_db, project_dir):
    (project_dir / "keys" / "upload_private").unlink()
    with pytest.raises(CommandError, match="upload_private is missing"):
        import_boinc(boinc_db, project_dir)


def test_an_existing_project_not_made_by_an_import_is_left_alone(boinc_db, standard, project_dir):
    ProjectFactory(slug="oldproj")
    with pytest.raises(CommandError, match="already exists and was not made by importing"):
        import_boinc(boinc_db, project_dir)
    assert not Account.objects.exists()


def test_a_wrong_database_password_is_a_clear_error(boinc_db, project_dir):
    url = urlsplit(boinc_db.url)
    wrong = f"mysql://nobody:wrong@{url.hostname}:{url.port}{url.path}"
    with pytest.raises(CommandError, match="cannot connect to mysql://nobody@"):
        call_command("import_boinc", "--project", "x", "--mysql", wrong, "--project-dir", str(project_dir))
