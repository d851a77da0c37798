from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.core.domain.signing import sign_md5_hex, verify_md5_signature
from apps.projects.models import Project

pytestmark = pytest.mark.django_db


def test_make_project_creates_key_pairs_that_sign_and_verify():
    call_command("make_project", "einstein", "--name", "Einstein Test", stdout=StringIO())
    project = Project.objects.get(slug="einstein")
    signature = sign_md5_hex(project.code_sign_private_key, "0123456789abcdef0123456789abcdef")
    assert verify_md5_signature(project.code_sign_public_key, "0123456789abcdef0123456789abcdef", signature)


def test_make_project_creates_download_upload_and_results_areas():
    call_command("make_project", "areas", "--name", "Areas", stdout=StringIO())
    project = Project.objects.get(slug="areas")
    assert project.download_dir.is_dir()
    assert project.upload_dir.is_dir()
    assert project.results_dir.is_dir()


def test_make_project_prints_master_and_scheduler_urls():
    out = StringIO()
    call_command("make_project", "urls", "--name", "Urls", stdout=out)
    assert "http://127.0.0.1:8000/urls/" in out.getvalue()
    assert "http://127.0.0.1:8000/urls/cgi" in out.getvalue()


def test_make_project_offline_signing_keeps_no_private_key():
    out = StringIO()
    call_command("make_project", "offline", "--name", "Offline", "--offline-code-signing", stdout=out)
    project = Project.objects.get(slug="offline")
    assert project.code_sign_private_key == ""
    assert "PRIVATE key" in out.getvalue()


def test_make_project_refuses_a_duplicate_slug_and_changes_nothing():
    call_command("make_project", "dup", "--name", "First", stdout=StringIO())
    with pytest.raises(CommandError, match="already exists"):
        call_command("make_project", "dup", "--name", "Second", stdout=StringIO())
    assert Project.objects.get(slug="dup").name == "First"


def test_make_project_refuses_a_slug_that_cannot_be_a_url_path():
    with pytest.raises(CommandError, match="slug"):
        call_command("make_project", "Bad Slug!", "--name", "X", stdout=StringIO())
    assert Project.objects.count() == 0


@pytest.mark.parametrize("slug", ["admin", "api", "static"])
def test_make_project_refuses_a_slug_the_portal_itself_uses(slug):
    # /admin/cgi would reach the admin, not this project's scheduler.
    with pytest.raises(CommandError, match="path of the portal itself"):
        call_command("make_project", slug, "--name", "X", stdout=StringIO())
    assert Project.objects.count() == 0
