"""The project pages of the admin: adding a project as make_project does, a slug that stays
put, and settings the stock client or the scheduler could not live with."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from lxml import html

from apps.applications.models import AppFile
from apps.core.domain.signing import sign_md5_hex, verify_md5_signature
from apps.projects.models import Project
from apps.projects.services import project_create
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/projects/project/add/"
MD5 = "0123456789abcdef0123456789abcdef"


def form_data(admin_client: Any, url: str, **changes: str) -> dict[str, Any]:
    """What the admin's form at ``url`` posts as shown, with ``changes`` typed in."""
    page = html.fromstring(admin_client.get(url).content)
    data: dict[str, Any] = {}
    for name, value in page.get_element_by_id("project_form").form_values():
        data.setdefault(name, []).append(value)
    data.update(changes)
    return data


def change_url(project: Project) -> str:
    return f"/admin/projects/project/{project.pk}/change/"


def post_change(admin_client: Any, project: Project, **changes: str) -> Any:
    return admin_client.post(change_url(project), form_data(admin_client, change_url(project), **changes))


def add_project(admin_client: Any, slug: str = "einstein") -> Project:
    response = admin_client.post(ADD_URL, form_data(admin_client, ADD_URL, slug=slug, name="Einstein Test"))
    assert response.status_code == 302
    return Project.objects.get(slug=slug)


# --- the slug -----------------------------------------------------------------------------


def test_the_slug_of_an_existing_project_cannot_be_changed_in_the_admin(admin_client):
    project = ProjectFactory(slug="einstein")
    post_change(admin_client, project, slug="einstein2", name="Renamed")
    project.refresh_from_db()
    assert project.name == "Renamed"
    assert project.slug == "einstein"
    assert admin_client.get("/einstein/").status_code == 200


def test_downloads_still_work_after_the_slug_was_posted_changed(admin_client):
    project = ProjectFactory(slug="einstein")
    project.download_dir.mkdir(parents=True)
    (project.download_dir / "in_1").write_bytes(b"input")
    post_change(admin_client, project, slug="einstein2")
    assert admin_client.get("/einstein/download/in_1").status_code == 200


def test_the_change_page_says_why_the_slug_is_fixed(admin_client):
    project = ProjectFactory(slug="einstein")
    page = html.fromstring(admin_client.get(change_url(project)).content)
    assert page.xpath('//input[@name="slug"]') == []
    assert "master URL" in page.xpath('string(//div[contains(@class, "field-slug")])')


def test_the_slug_is_typed_in_when_adding_a_project(admin_client):
    page = html.fromstring(admin_client.get(ADD_URL).content)
    assert len(page.xpath('//input[@name="slug"]')) == 1


# --- adding a project -----------------------------------------------------------------------


def test_a_project_added_in_the_admin_gets_a_code_signing_key_pair_that_signs(admin_client):
    project = add_project(admin_client)
    signature = sign_md5_hex(project.code_sign_private_key, MD5)
    assert verify_md5_signature(project.code_sign_public_key, MD5, signature)


def test_a_project_added_in_the_admin_gets_an_upload_key_pair(admin_client):
    project = add_project(admin_client)
    signature = sign_md5_hex(project.upload_private_key, MD5)
    assert verify_md5_signature(project.upload_public_key, MD5, signature)


def test_a_project_added_in_the_admin_gets_its_download_and_upload_areas(admin_client):
    project = add_project(admin_client)
    assert project.download_dir.is_dir()
    assert project.upload_dir.is_dir()
    assert project.results_dir.is_dir()
    assert project.archive_dir.is_dir()


def test_add_app_version_signs_the_app_of_a_project_added_in_the_admin(admin_client, tmp_path: Path):
    project = add_project(admin_client)
    worker = tmp_path / "worker.sh"
    worker.write_text("#!/bin/sh\n")
    call_command("add_app", "--project", "einstein", "sim", stdout=StringIO())
    call_command(
        "add_app_version",
        *("--project", "einstein", "--appname", "sim", "--version_num", "100"),
        *("--platform", "x86_64-pc-linux-gnu", "--file", str(worker)),
        stdout=StringIO(),
    )
    app_file = AppFile.objects.get()
    assert verify_md5_signature(project.code_sign_public_key, app_file.md5_cksum, app_file.file_signature)


def test_the_add_page_points_to_make_project_for_offline_code_signing(admin_client):
    page = admin_client.get(ADD_URL).content.decode()
    assert "make_project" in page
    assert "--offline-code-signing" in page


# --- settings the client or the scheduler cannot live with ------------------------------------


def test_a_base_url_whose_host_has_no_dot_is_refused(admin_client):
    project = ProjectFactory()
    response = post_change(admin_client, project, base_url="http://localhost:8765")
    assert response.status_code == 200
    assert "dot" in str(response.context["adminform"].form.errors["base_url"])
    project.refresh_from_db()
    assert project.base_url == ""


def test_a_loopback_ip_base_url_is_accepted(admin_client):
    project = ProjectFactory()
    response = post_change(admin_client, project, base_url="http://127.0.0.1:8765")
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.master_url == f"http://127.0.0.1:8765/{project.slug}/"


@pytest.mark.parametrize("field", ["max_wus_to_send", "gpu_multiplier"])
def test_a_job_limit_setting_of_zero_is_refused(admin_client, field):
    project = ProjectFactory()
    response = post_change(admin_client, project, **{field: "0"})
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    project.refresh_from_db()
    assert getattr(project, field) == Project._meta.get_field(field).default


def test_a_new_project_takes_the_sites_report_grace_period(settings):
    settings.COBBLESTONE_REPORT_GRACE_PERIOD = 7200
    project = project_create(slug="gracious", name="Gracious").project
    project.refresh_from_db()
    assert project.report_grace_period == 7200


def test_a_base_url_typed_without_a_scheme_is_taken_as_https(admin_client):
    project = ProjectFactory()
    response = post_change(admin_client, project, base_url="boinc.example.org")
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.base_url == "https://boinc.example.org"


# --- reliable hosts -------------------------------------------------------------------------


def test_the_reliable_host_settings_are_set_in_the_admin(admin_client):
    project = ProjectFactory(slug="einstein")
    response = post_change(
        admin_client, project, reliable_on_priority="10", reliable_reduced_delay_bound="0.25"
    )
    assert response.status_code == 302
    project.refresh_from_db()
    assert (project.reliable_on_priority, project.reliable_reduced_delay_bound) == (10, 0.25)


def test_a_reduced_delay_bound_above_one_is_refused_in_the_admin(admin_client):
    project = ProjectFactory(slug="einstein")
    response = post_change(admin_client, project, reliable_reduced_delay_bound="1.5")
    assert response.status_code == 200
    assert b"less than or equal to 1" in response.content
    project.refresh_from_db()
    assert project.reliable_reduced_delay_bound == 0
