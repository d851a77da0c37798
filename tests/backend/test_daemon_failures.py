"""A daemon pass that fails on one row: the row is retried later, the rest of the queue moves
on; and a file the deleter removed is never handed to a new workunit as if it were there."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.work.domain.states import FileDeleteState, ValidateState
from apps.work.models import InputFile, Workunit
from apps.work.services import (
    InputSpec,
    WorkError,
    file_deleter,
    files_delete,
    purge,
    workunits_purge,
    workunits_transition,
    workunits_validate,
)
from apps.work.services import create as create_module
from tests.backend.conftest import make_wu, refresh, report, results_of, send


@pytest.fixture
def broken_comparison(app):
    """An app whose validator raises for outputs starting with b"boom" (a buggy validator)."""
    app.validator = "tests.backend.science"
    app.save()


def reported_wu(project, app, version, hosts, now, name: str, output: bytes):
    wu = make_wu(project, app, now, name=name)
    for r, h in zip(results_of(wu), hosts[:2], strict=True):
        send(r, h, version, now)
        report(r, now, output=output)
    return wu


def test_a_workunit_whose_validation_raises_does_not_hold_up_the_next_ones(
    broken_comparison, project, app, version, hosts, now
):
    bad = reported_wu(project, app, version, hosts, now, "bad", b"boom\n")
    good = reported_wu(project, app, version, hosts, now, "good", b"fine\n")
    workunits_transition(project=project, now=now)

    first = workunits_validate(project=project, now=now, limit=1)
    second = workunits_validate(project=project, now=now, limit=1)

    assert first.errors == 1
    assert second.errors == 0
    (good,) = refresh(good)
    assert good.canonical_result_id is not None
    assert [r.validate_state for r in results_of(bad)] == [ValidateState.INIT, ValidateState.INIT]


def test_a_workunit_whose_validation_raises_does_not_stop_the_rest_of_its_batch(
    broken_comparison, project, app, version, hosts, now
):
    good = [reported_wu(project, app, version, hosts, now, f"good{i}", b"fine\n") for i in range(2)]
    bad = reported_wu(project, app, version, hosts, now, "bad", b"boom\n")
    workunits_transition(project=project, now=now)

    outcome = workunits_validate(project=project, now=now)

    assert (outcome.items, outcome.errors) == (2, 1)
    assert [wu.canonical_result_id is not None for wu in refresh(*good, bad)] == [True, True, False]


def test_a_workunit_whose_validation_raised_is_tried_again_after_the_claims_lease(
    broken_comparison, project, app, version, hosts, now
):
    bad = reported_wu(project, app, version, hosts, now, "bad", b"boom\n")
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)

    later = now + timedelta(minutes=11)
    workunits_transition(project=project, now=later)

    (bad,) = refresh(bad)
    assert bad.need_validate is True


def test_an_input_file_the_deleter_removed_is_staged_again_for_a_new_workunit(project, app, now, tmp_path):
    source = tmp_path / "in.dat"
    source.write_bytes(b"input\n")
    first = make_wu(project, app, now, name="first", inputs=[InputSpec(path=source)])
    Workunit.objects.filter(id=first.id).update(file_delete_state=FileDeleteState.READY)
    files_delete(project=project, now=now)
    assert not (project.download_dir / "in.dat").exists()

    make_wu(project, app, now, name="second", inputs=[InputSpec(path=source)])

    assert (project.download_dir / "in.dat").read_bytes() == b"input\n"
    assert InputFile.objects.get(project=project, name="in.dat").file_delete_state == FileDeleteState.INIT


def test_a_new_workunit_naming_an_input_file_the_deleter_removed_is_refused(project, app, now, tmp_path):
    source = tmp_path / "in.dat"
    source.write_bytes(b"input\n")
    first = make_wu(project, app, now, name="first", inputs=[InputSpec(path=source)])
    Workunit.objects.filter(id=first.id).update(file_delete_state=FileDeleteState.READY)
    files_delete(project=project, now=now)

    with pytest.raises(WorkError, match="deleted"):
        make_wu(project, app, now, name="second", inputs=[InputSpec(name="in.dat")])
    assert not Workunit.objects.filter(name="second").exists()


def test_an_input_file_deleted_while_a_new_workunit_is_staged_is_not_marked_needed_again(
    monkeypatch, project, app, now, tmp_path
):
    source = tmp_path / "in.dat"
    source.write_bytes(b"input\n")
    make_wu(project, app, now, name="first", inputs=[InputSpec(path=source)])
    InputFile.objects.filter(name="in.dat").update(file_delete_state=FileDeleteState.READY)
    real = create_module._needed_again

    def deleter_gets_there_first(f, **kw):
        # The row was read as READY; the deleter now removes the file and commits DONE.
        (project.download_dir / "in.dat").unlink()
        InputFile.objects.filter(id=f.id).update(file_delete_state=FileDeleteState.DONE)
        return real(f, **kw)

    monkeypatch.setattr(create_module, "_needed_again", deleter_gets_there_first)
    with pytest.raises(WorkError, match="deleted"):
        make_wu(project, app, now, name="second", inputs=[InputSpec(name="in.dat")])
    assert not Workunit.objects.filter(name="second").exists()


@pytest.fixture
def unlink_raises(monkeypatch):
    """Deleting a file named ``bad*`` raises an error the deleter does not expect (a bug)."""
    real = file_deleter._unlink

    def unlink(path):
        if path.name.startswith("bad"):
            raise RuntimeError("deleter bug")
        return real(path)

    monkeypatch.setattr(file_deleter, "_unlink", unlink)


def deletable(project, app, now, tmp_path, name: str) -> Workunit:
    path = tmp_path / f"{name}.in"
    path.write_bytes(b"input\n")
    wu = make_wu(project, app, now, name=name, inputs=(InputSpec(path=path),))
    Workunit.objects.filter(id=wu.id).update(file_delete_state=FileDeleteState.READY)
    return wu


def test_a_workunit_whose_file_deletion_raises_does_not_stop_the_rest_of_its_batch(
    unlink_raises, project, app, now, tmp_path
):
    bad = deletable(project, app, now, tmp_path, "bad")
    good = [deletable(project, app, now, tmp_path, f"good{i}") for i in range(2)]

    outcome = files_delete(project=project, now=now)

    assert (outcome.items, outcome.errors) == (2, 1)
    states = [wu.file_delete_state for wu in refresh(bad, *good)]
    assert states == [FileDeleteState.READY, FileDeleteState.DONE, FileDeleteState.DONE]


def test_a_workunit_whose_file_deletion_raised_is_left_out_of_the_next_batches(
    unlink_raises, project, app, now, tmp_path
):
    deletable(project, app, now, tmp_path, "bad")
    files_delete(project=project, now=now)
    late = deletable(project, app, now, tmp_path, "late")

    outcome = files_delete(project=project, now=now)

    assert (outcome.items, outcome.errors) == (1, 0)
    (late,) = refresh(late)
    assert late.file_delete_state == FileDeleteState.DONE


def test_a_workunit_whose_purge_raises_does_not_stop_the_rest_of_its_batch(monkeypatch, project, app, now):
    wus = [make_wu(project, app, now, name=n) for n in ("good0", "bad", "good1")]
    Workunit.objects.filter(id__in=[wu.id for wu in wus]).update(file_delete_state=FileDeleteState.DONE)
    real = purge._records

    def records(batch, when):
        if any(wu.name == "bad" for wu in batch):
            raise RuntimeError("archive bug")
        return real(batch, when)

    monkeypatch.setattr(purge, "_records", records)

    outcome = workunits_purge(project=project, now=now + timedelta(days=30), min_age_days=1)

    assert (outcome.items, outcome.errors) == (2, 1)
    assert list(Workunit.objects.values_list("name", flat=True)) == ["bad"]
