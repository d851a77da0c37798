"""rotate_code_sign_key, and the scheduler handing the rotated key to clients."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.core.domain.signing import (
    generate_key_pair,
    public_text_from_private,
    verify_key_rotation,
    verify_md5_signature,
)
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.volunteers.models import Account
from tests.scheduler.conftest import PLATFORM, make_request, rpc

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_project(project, tmp_path):
    main = tmp_path / "main.sh"
    main.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    app_create(project=project, name="worker")
    app_version_add(
        project=project, app_name="worker", version_num=100, platform_name=PLATFORM, files=[AppFileSpec(main)]
    )
    return project


def rotate(project, *args: str) -> str:
    out = StringIO()
    call_command("rotate_code_sign_key", "--project", project.slug, *args, stdout=out)
    return out.getvalue()


def test_rotation_stores_a_new_key_vouched_for_by_the_old_one(signed_project):
    old_public = signed_project.code_sign_public_key
    output = rotate(signed_project)
    project = Project.objects.get(pk=signed_project.pk)
    assert project.code_sign_public_key != old_public
    assert public_text_from_private(project.code_sign_private_key) == project.code_sign_public_key
    assert verify_key_rotation(old_public, project.code_sign_public_key, project.code_sign_key_signature)
    assert "1 app file(s) re-signed" in output


def test_rotation_re_signs_app_files_with_the_new_key(signed_project):
    rotate(signed_project)
    project = Project.objects.get(pk=signed_project.pk)
    app_file = project.apps.get().versions.get().files.get()
    assert verify_md5_signature(project.code_sign_public_key, app_file.md5_cksum, app_file.file_signature)


def test_offline_project_needs_the_old_private_key(tmp_path, db):
    created = project_create(slug="offline", name="Offline", keep_private_key=False)
    with pytest.raises(CommandError, match="--old_private_key"):
        rotate(created.project)
    old_key = tmp_path / "old.key"
    old_key.write_text(created.code_sign_private_key)
    new_key = tmp_path / "new.key"
    rotate(created.project, "--old_private_key", str(old_key), "--new_private_key_out", str(new_key))
    project = Project.objects.get(pk=created.project.pk)
    assert project.code_sign_private_key == ""
    assert public_text_from_private(new_key.read_text()) == project.code_sign_public_key
    assert verify_key_rotation(
        created.project.code_sign_public_key, project.code_sign_public_key, project.code_sign_key_signature
    )


def test_a_private_key_of_another_project_is_refused(tmp_path, db):
    created = project_create(slug="offline", name="Offline", keep_private_key=False)
    stranger = tmp_path / "stranger.key"
    stranger.write_text(generate_key_pair().private_text)
    with pytest.raises(CommandError, match="does not match"):
        rotate(created.project, "--old_private_key", str(stranger))
    assert (
        Project.objects.get(pk=created.project.pk).code_sign_public_key
        == created.project.code_sign_public_key
    )


def test_scheduler_sends_the_new_key_and_its_signature_to_a_client_holding_the_old_key(
    client, signed_project
):
    account = Account.objects.create(
        project=signed_project, name="v", email_addr="v@example.com", passwd_hash="x"
    )
    old_public = signed_project.code_sign_public_key.strip()
    rotate(signed_project)
    project = Project.objects.get(pk=signed_project.pk)

    holding_old = rpc(client, project, make_request(account.authenticator, code_sign_key=old_public))
    assert holding_old.code_sign_key.strip() == project.code_sign_public_key.strip()
    assert holding_old.code_sign_key_signature
    assert verify_key_rotation(old_public, holding_old.code_sign_key, holding_old.code_sign_key_signature)

    holding_new = rpc(
        client, project, make_request(account.authenticator, code_sign_key=project.code_sign_public_key)
    )
    assert holding_new.code_sign_key is None
    assert holding_new.code_sign_key_signature is None

    holding_none = rpc(client, project, make_request(account.authenticator))
    assert holding_none.code_sign_key.strip() == project.code_sign_public_key.strip()
    assert holding_none.code_sign_key_signature is None


def test_unknown_project_is_a_command_error(db):
    with pytest.raises(CommandError, match="no project"):
        call_command("rotate_code_sign_key", "--project", "nope")
