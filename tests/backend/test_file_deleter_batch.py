"""The file deleter decides a batch of workunits as one after the other would: a file shared
within the batch goes once the last of its users is through; its statements do not grow with
the batch; and on PostgreSQL two deleters at once handle each row once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.work.domain.states import FileDeleteState
from apps.work.models import InputFile, OutputFile, Result, Workunit
from apps.work.services import InputSpec, files_delete
from tests.backend.conftest import make_wu
from tests.threads import in_thread


def finished(project, app, now, tmp_path, name: str, *inputs: str) -> Workunit:
    """A workunit whose input files and results' uploads are ready for deletion."""
    specs = []
    for input_name in inputs:
        path = tmp_path / input_name
        if not path.exists():
            path.write_bytes(b"input\n")
        specs.append(InputSpec(path=path))
    wu = make_wu(project, app, now, name=name, inputs=tuple(specs))
    project.upload_dir.mkdir(parents=True, exist_ok=True)
    for f in OutputFile.objects.filter(result__workunit=wu):
        (project.upload_dir / f.name).write_bytes(b"42\n")
    Workunit.objects.filter(id=wu.id).update(file_delete_state=FileDeleteState.READY)
    Result.objects.filter(workunit=wu).update(file_delete_state=FileDeleteState.READY)
    return wu


def input_state(name: str) -> int:
    return InputFile.objects.get(name=name).file_delete_state


@pytest.mark.django_db
def test_an_input_file_two_workunits_of_one_pass_share_is_deleted(project, app, now, tmp_path):
    finished(project, app, now, tmp_path, "a", "shared.dat")
    finished(project, app, now, tmp_path, "b", "shared.dat")

    outcome = files_delete(project=project, now=now)

    assert (outcome.items, outcome.errors) == (6, 0)  # two workunits, four results
    assert not (project.download_dir / "shared.dat").exists()
    assert input_state("shared.dat") == FileDeleteState.DONE


@pytest.mark.django_db
def test_a_file_shared_with_a_workunit_left_for_the_next_pass_is_deleted_by_that_pass(
    project, app, now, tmp_path
):
    finished(project, app, now, tmp_path, "a", "shared.dat")
    finished(project, app, now, tmp_path, "b", "shared.dat")

    files_delete(project=project, now=now, limit=1)
    kept = (project.download_dir / "shared.dat").exists()
    files_delete(project=project, now=now, limit=1)

    assert kept is True
    assert not (project.download_dir / "shared.dat").exists()
    assert input_state("shared.dat") == FileDeleteState.DONE


@pytest.mark.django_db
def test_a_file_a_nodelete_workunit_later_in_the_pass_uses_stays(project, app, now, tmp_path):
    finished(project, app, now, tmp_path, "a", "shared.dat")
    finished(project, app, now, tmp_path, "b-nodelete", "shared.dat")

    files_delete(project=project, now=now)

    assert (project.download_dir / "shared.dat").exists()
    assert set(Workunit.objects.values_list("file_delete_state", flat=True)) == {FileDeleteState.DONE}


def statements_of_a_pass(project, now) -> int:
    with CaptureQueriesContext(connection) as queries:
        outcome = files_delete(project=project, now=now)
    assert outcome.errors == 0
    return len(queries)


@pytest.mark.django_db
def test_a_pass_over_five_workunits_takes_as_many_statements_as_over_one(project, app, now, tmp_path):
    finished(project, app, now, tmp_path, "one", "one.dat")
    one = statements_of_a_pass(project, now)
    for i in range(5):
        finished(project, app, now, tmp_path, f"five-{i}", f"five-{i}.dat")

    five = statements_of_a_pass(project, now)

    assert five == one
    assert not list(project.download_dir.iterdir())
    assert not list(project.upload_dir.iterdir())


@pytest.mark.postgres
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_two_file_deleters_at_once_handle_each_row_once(project, app, now, tmp_path):
    for i in range(30):
        finished(project, app, now, tmp_path, f"wu{i}", f"own{i}.dat", "shared.dat")
    passes: list[tuple[int, int]] = []

    def deleter() -> None:
        while True:
            outcome = files_delete(project=project, now=now, limit=4)
            if not outcome.items:
                return
            passes.append((outcome.items, outcome.errors))

    workers = [in_thread(deleter) for _ in range(2)]
    for thread, _ in workers:
        thread.join(60)

    assert [errors for _, errors in workers] == [[], []]
    assert sum(items for items, _ in passes) == 30 + 60  # each workunit and result once
    assert sum(errors for _, errors in passes) == 0
    assert set(Workunit.objects.values_list("file_delete_state", flat=True)) == {FileDeleteState.DONE}
    assert set(InputFile.objects.values_list("file_delete_state", flat=True)) == {FileDeleteState.DONE}
    assert not list(project.download_dir.iterdir())
    assert not list(project.upload_dir.iterdir())
