"""A daemon pass that fails on one row: the row is retried later, the rest of the queue moves
on; and a file the deleter removed is never handed to a new workunit as if it were there."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.work.domain.states import FileDeleteState, ValidateState
from apps.work.models import InputFile, Workunit
from apps.work.services import InputSpec, WorkError, files_delete, workunits_transition, workunits_validate
from apps.work.services import create as create_module
from apps.work.services.comparisons import COMPARISONS, Comparison
from tests.backend.conftest import make_wu, refresh, report, results_of, send


@pytest.fixture
def broken_comparison(app):
    """An app whose comparison raises for outputs starting with b"boom" (a buggy validator)."""

    def compare(a, b):  # type: ignore[no-untyped-def]
        if a and a[0].startswith(b"boom"):
            raise ValueError("validator bug")
        return a == b

    COMPARISONS["test-broken"] = lambda _app: Comparison(compare)
    app.validator = "test-broken"
    app.save()
    yield
    del COMPARISONS["test-broken"]


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

    def deleter_gets_there_first(f, **kw):  # type: ignore[no-untyped-def]
        # The row was read as READY; the deleter now removes the file and commits DONE.
        (project.download_dir / "in.dat").unlink()
        InputFile.objects.filter(id=f.id).update(file_delete_state=FileDeleteState.DONE)
        return real(f, **kw)

    monkeypatch.setattr(create_module, "_needed_again", deleter_gets_there_first)
    with pytest.raises(WorkError, match="deleted"):
        make_wu(project, app, now, name="second", inputs=[InputSpec(name="in.dat")])
    assert not Workunit.objects.filter(name="second").exists()
