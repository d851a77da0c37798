"""Uploaded input files live until their delete time and while an open batch holds them."""

from __future__ import annotations

import time

import pytest

from apps.core import clock
from apps.work.services.daemons import daemons_round
from tests.submit.client import SubmitClient, md5_name

pytestmark = pytest.mark.django_db


@pytest.fixture
def uploaded(client, project, app, alice, tmp_path):
    def upload(batch_id: int = 0) -> str:
        path = tmp_path / "in.txt"
        path.write_bytes(b"data\n")
        name = md5_name(path.read_bytes())
        reply = SubmitClient(client, project.slug, alice.authenticator).upload_files(
            [path], [name], batch_id=batch_id, delete_time=int(time.time()) - 1
        )
        assert reply == {"success": None}
        return name

    return upload


def test_a_file_past_its_delete_time_is_deleted(project, uploaded):
    name = uploaded()
    daemons_round(slug=project.slug)  # the batches daemon hands it to the file deleter,
    daemons_round(slug=project.slug)  # whose next pass deletes it
    assert not (project.download_dir / name).exists()


def test_a_file_an_open_batch_holds_is_kept(client, project, alice, uploaded):
    batch_id = int(SubmitClient(client, project.slug, alice.authenticator).create_batch("cpuapp")["batch_id"])
    name = uploaded(batch_id)
    daemons_round(slug=project.slug)
    daemons_round(slug=project.slug)
    assert (project.download_dir / name).exists()


def test_a_job_file_whose_input_file_was_purged_is_forgotten(project, uploaded):
    from apps.submit.models import JobFile
    from apps.work.models import InputFile
    from apps.work.services.purge import workunits_purge

    name = uploaded()
    daemons_round(slug=project.slug)
    daemons_round(slug=project.slug)
    workunits_purge(project=project, now=clock.now())  # the deleted file's row goes
    assert not InputFile.objects.filter(name=name).exists()
    daemons_round(slug=project.slug)
    assert not JobFile.objects.exists()
