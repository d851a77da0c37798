"""App versions > Add in the admin: files uploaded through the form, stored in the download
area and signed as add_app_version does; refusals are the form's messages, never a 500."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.applications.models import AppFile, AppVersion
from apps.applications.services import AppError, AppFileSpec, app_create, app_version_add
from apps.core.domain.signing import verify_md5_signature
from apps.projects.services import project_create
from tests.factories import AppFactory, PlatformFactory, ProjectFactory

pytestmark = pytest.mark.django_db

ADD = "/admin/applications/appversion/add/"
PROGRAM = b"#!/bin/sh\necho hello\n"


@pytest.fixture
def app():
    project = project_create(slug="alpha", name="Alpha").project  # keys and data areas
    return app_create(project=project, name="sim")


@pytest.fixture
def platform():
    return PlatformFactory(name="x86_64-pc-linux-gnu")


def _post(admin_client, app, platform, **changes):
    data = {
        "app": app.pk,
        "platform": platform.pk,
        "version_num": "712",
        "plan_class": "",
        "main_program": SimpleUploadedFile("sim_worker", PROGRAM),
        **changes,
    }
    return admin_client.post(ADD, {k: v for k, v in data.items() if v is not None})


def _errors(response) -> str:
    return " ".join(message for messages in response.context["form"].errors.values() for message in messages)


def test_adding_a_version_stores_its_files_in_the_download_area_signed(admin_client, app, platform):
    response = _post(
        admin_client,
        app,
        platform,
        other_files=[SimpleUploadedFile("libsim.so", b"lib"), SimpleUploadedFile("data.txt", b"d")],
    )
    version = AppVersion.objects.get()
    assert response["Location"] == "/admin/applications/appversion/"
    files = list(AppFile.objects.filter(app_version=version).order_by("ordinal"))
    assert [(f.file_name, f.open_name, f.main_program) for f in files] == [
        ("sim_712_x86_64-pc-linux-gnu_sim_worker", "", True),
        ("sim_712_x86_64-pc-linux-gnu_libsim.so", "libsim.so", False),
        ("sim_712_x86_64-pc-linux-gnu_data.txt", "data.txt", False),
    ]
    main = files[0]
    assert (app.project.download_dir / main.file_name).read_bytes() == PROGRAM
    assert (main.nbytes, main.md5_cksum) == (len(PROGRAM), hashlib.md5(PROGRAM).hexdigest())
    assert verify_md5_signature(app.project.code_sign_public_key, main.md5_cksum, main.file_signature)


def test_a_version_without_its_main_program_is_refused(admin_client, app, platform):
    response = _post(admin_client, app, platform, main_program=None)
    assert response.status_code == 200
    assert "This field is required" in _errors(response)
    assert not AppVersion.objects.exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"plan_class": "warp_drive"}, "unknown plan class 'warp_drive'"),
        ({"version_num": "0"}, "greater than or equal to 1"),
        ({"version_num": str(2**40)}, "less than or equal to"),
        ({"main_program": SimpleUploadedFile("../evil sh", PROGRAM)}, "a file name is letters"),
    ],
)
def test_bad_input_is_the_forms_message_and_saves_nothing(admin_client, app, platform, changes, message):
    response = _post(admin_client, app, platform, **changes)
    assert response.status_code == 200
    assert message in _errors(response)
    assert not AppVersion.objects.exists()
    assert not any(app.project.download_dir.iterdir())


def test_two_files_of_one_name_are_refused(admin_client, app, platform):
    response = _post(admin_client, app, platform, other_files=[SimpleUploadedFile("sim_worker", b"x")])
    assert "two files named 'sim_worker'" in _errors(response)
    assert not AppVersion.objects.exists()


def test_an_existing_version_is_refused_by_name(admin_client, app, platform):
    _post(admin_client, app, platform)
    response = _post(admin_client, app, platform)
    assert "version 712 of sim for x86_64-pc-linux-gnu '' already exists" in _errors(response)
    assert AppVersion.objects.count() == 1


def test_a_project_that_signs_offline_is_told_to_use_the_command(admin_client, platform):
    offline = AppFactory(project=ProjectFactory(slug="offline", code_sign_private_key=""), name="sim")
    response = _post(admin_client, offline, platform)
    assert "no signature given and the project keeps no private key" in _errors(response)


def test_the_app_list_names_each_apps_project(admin_client, app):
    AppFactory(project=ProjectFactory(slug="beta", name="Beta"), name="sim")
    choices = [label for _, label in admin_client.get(ADD).context["form"].fields["app"].choices]
    assert choices[1:] == ["alpha / sim", "beta / sim"]


def test_a_file_row_typed_in_on_the_change_page_is_refused_not_a_server_error(admin_client, app, platform):
    _post(admin_client, app, platform)
    version = AppVersion.objects.get()
    url = f"/admin/applications/appversion/{version.pk}/change/"
    prefix = "files"
    response = admin_client.post(
        url,
        {
            "proc_type": version.proc_type,
            "avg_ncpus": "1",
            "max_ncpus": "1",
            "gpu_usage": "0",
            f"{prefix}-TOTAL_FORMS": "2",
            f"{prefix}-INITIAL_FORMS": "1",
            f"{prefix}-0-id": str(version.files.get().pk),
            f"{prefix}-0-app_version": str(version.pk),
            f"{prefix}-1-file_name": "sim_worker",
            f"{prefix}-1-app_version": str(version.pk),
        },
    )
    assert response.status_code in (200, 302)
    assert AppFile.objects.count() == 1
    [files] = admin_client.get(url).context["inline_admin_formsets"]
    assert files.formset.max_num == 0  # no empty file row to type into


def test_the_service_refuses_two_files_of_one_name(app, platform, tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "worker").write_bytes(PROGRAM)
    with pytest.raises(AppError, match="two files of one version cannot share a name"):
        app_version_add(
            project=app.project,
            app_name="sim",
            version_num=100,
            platform_name=platform.name,
            files=[AppFileSpec(path=tmp_path / "a" / "worker"), AppFileSpec(path=tmp_path / "b" / "worker")],
        )
    assert not AppVersion.objects.exists()
