"""Assimilator hooks, file deletion (shared and locality files) and db_purge with its archive."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from apps.locality.models import LocalityFile
from apps.work.domain.states import AssimilateState, ErrorMask, FileDeleteState
from apps.work.models import InputFile, Result, Workunit
from apps.work.services import (
    InputSpec,
    files_delete,
    workunits_assimilate,
    workunits_purge,
    workunits_transition,
    workunits_validate,
)
from apps.work.services.purge import archive_path, archive_read
from tests.backend.conftest import make_wu, report, results_of, send

pytestmark = pytest.mark.django_db

CALLS: list[tuple[str, int | None, int]] = []


def recording_hook(workunit, canonical_result, output_paths):
    CALLS.append((workunit.name, canonical_result.id if canonical_result else None, len(output_paths)))
    return f"/custom/{workunit.name}"


def failing_hook(workunit, canonical_result, output_paths):
    raise RuntimeError("science database is down")


def _done(project, app, version, hosts, now, name="wu", **kw):
    """A workunit validated with two agreeing results (READY for the assimilator)."""
    wu = make_wu(project, app, now, name=name, **kw)
    for i, r in enumerate(results_of(wu)):
        send(r, hosts[i], version, now)
        report(r, now, output=f"result of {name}\n".encode())
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)
    wu.refresh_from_db()
    assert wu.assimilate_state == AssimilateState.READY
    return wu


def test_default_assimilator_copies_the_canonical_outputs(project, app, version, hosts, now):
    wu = _done(project, app, version, hosts, now)
    outcome = workunits_assimilate(project=project, now=now)
    wu.refresh_from_db()
    assert outcome.items == 1
    assert wu.assimilate_state == AssimilateState.DONE
    target = Path(wu.assimilated_path)
    assert target == project.results_dir / "wu"
    canonical_file = wu.canonical_result.output_files.get()
    assert (target / canonical_file.name).read_bytes() == b"result of wu\n"
    assert wu.transition_time == now  # the transitioner decides about file deletion next
    assert workunits_assimilate(project=project, now=now).items == 0


def test_an_apps_hook_is_called_once_with_the_canonical_result(project, app, version, hosts, now):
    app.assimilator = "tests.backend.test_assimilator_and_files.recording_hook"
    app.save()
    CALLS.clear()
    wu = _done(project, app, version, hosts, now)
    workunits_assimilate(project=project, now=now)
    workunits_assimilate(project=project, now=now)
    wu.refresh_from_db()
    assert [("wu", wu.canonical_result_id, 1)] == CALLS
    assert wu.assimilated_path == "/custom/wu"


def test_a_failing_hook_leaves_the_workunit_for_the_next_pass(project, app, version, hosts, now):
    app.assimilator = "tests.backend.test_assimilator_and_files.failing_hook"
    app.save()
    wu = _done(project, app, version, hosts, now)
    outcome = workunits_assimilate(project=project, now=now)
    assert (outcome.items, outcome.errors) == (0, 1)
    assert "science database is down" in outcome.message
    wu.refresh_from_db()
    assert wu.assimilate_state == AssimilateState.READY
    app.assimilator = ""
    app.save()
    # After its back-off (test_assimilator_retry.py holds the delays).
    assert workunits_assimilate(project=project, now=now + timedelta(minutes=1)).items == 1


def test_an_errored_workunit_is_assimilated_with_an_error_note(project, app, now):
    wu = make_wu(project, app, now)
    Workunit.objects.filter(id=wu.id).update(error_mask=ErrorMask.CANCELLED)
    workunits_transition(project=project, now=now)
    workunits_assimilate(project=project, now=now)
    wu.refresh_from_db()
    assert wu.assimilate_state == AssimilateState.DONE
    assert (Path(wu.assimilated_path) / "ERROR").read_text() == "CANCELLED\n"


def _assimilated_and_marked(project, app, version, hosts, now, name="wu", **kw):
    wu = _done(project, app, version, hosts, now, name=name, **kw)
    workunits_assimilate(project=project, now=now)
    workunits_transition(project=project, now=now)  # marks the files READY
    wu.refresh_from_db()
    return wu


def _input(project, tmp_path, name, **kw):
    path = tmp_path / name
    path.write_bytes(b"input data")
    return InputSpec(path=path, **kw)


def test_file_deleter_removes_inputs_and_outputs_of_a_finished_workunit(
    project, app, version, hosts, now, tmp_path
):
    wu = _assimilated_and_marked(
        project, app, version, hosts, now, inputs=(_input(project, tmp_path, "in.dat"),)
    )
    assert wu.file_delete_state == FileDeleteState.READY
    outputs = [project.upload_dir / f.name for r in results_of(wu) for f in r.output_files.all()]
    assert all(p.exists() for p in outputs)
    files_delete(project=project, now=now)
    wu.refresh_from_db()
    assert wu.file_delete_state == FileDeleteState.DONE
    assert not (project.download_dir / "in.dat").exists()
    assert not any(p.exists() for p in outputs)
    assert {r.file_delete_state for r in results_of(wu)} == {FileDeleteState.DONE}
    assert files_delete(project=project, now=now).items == 0


def test_file_deleter_removes_an_upload_the_client_left_unfinished(project, app, version, hosts, now):
    wu = _assimilated_and_marked(project, app, version, hosts, now)
    output = results_of(wu)[0].output_files.first()
    leftover = project.upload_dir / f".{output.name}.part"  # a retry that never completed
    leftover.write_bytes(b"half a fil")
    files_delete(project=project, now=now)
    assert not leftover.exists()
    assert not (project.upload_dir / output.name).exists()


def test_an_input_file_shared_with_an_unfinished_workunit_stays(project, app, version, hosts, now, tmp_path):
    make_wu(project, app, now, name="other", inputs=(_input(project, tmp_path, "shared.dat"),))
    _assimilated_and_marked(project, app, version, hosts, now, inputs=(InputSpec(name="shared.dat"),))
    files_delete(project=project, now=now)
    assert (project.download_dir / "shared.dat").exists()
    assert InputFile.objects.get(name="shared.dat").file_delete_state == FileDeleteState.INIT


def test_a_sticky_locality_file_stays_while_in_the_working_set(project, app, version, hosts, now, tmp_path):
    wu = _assimilated_and_marked(
        project, app, version, hosts, now, inputs=(_input(project, tmp_path, "big.dat", sticky=True),)
    )
    LocalityFile.objects.create(project=project, name="big.dat", in_working_set=True)
    files_delete(project=project, now=now)
    wu.refresh_from_db()
    assert wu.file_delete_state == FileDeleteState.DONE
    assert (project.download_dir / "big.dat").exists()
    assert InputFile.objects.get(name="big.dat").file_delete_state == FileDeleteState.READY
    LocalityFile.objects.filter(name="big.dat").update(in_working_set=False)
    files_delete(project=project, now=now)
    assert not (project.download_dir / "big.dat").exists()
    assert InputFile.objects.get(name="big.dat").file_delete_state == FileDeleteState.DONE


def test_purge_archives_then_deletes_old_finished_workunits(project, app, version, hosts, now, tmp_path):
    wu = _assimilated_and_marked(
        project, app, version, hosts, now, inputs=(_input(project, tmp_path, "p.dat"),)
    )
    files_delete(project=project, now=now)
    result_names = sorted(r.name for r in results_of(wu))
    assert workunits_purge(project=project, now=now + timedelta(days=1)).items == 0  # too young (7 days)
    later = now + timedelta(days=8)
    outcome = workunits_purge(project=project, now=later)
    assert not Workunit.objects.filter(id=wu.id).exists()
    assert not Result.objects.filter(workunit_id=wu.id).exists()
    assert outcome.items == 2  # the workunit and its orphaned input-file row
    [record] = archive_read(archive_path(project, later.date()))
    assert record["format"] == 1
    assert record["workunit"]["name"] == "wu"
    assert record["workunit"]["canonical_result_id"] in {r["id"] for r in record["results"]}
    assert sorted(r["name"] for r in record["results"]) == result_names
    assert record["input_files"][0]["name"] == "p.dat"
    assert workunits_purge(project=project, now=later).items == 0


def test_purge_keeps_workunits_whose_files_are_not_deleted(project, app, version, hosts, now):
    wu = _assimilated_and_marked(project, app, version, hosts, now)
    workunits_purge(project=project, now=now + timedelta(days=30), min_age_days=0)
    assert Workunit.objects.filter(id=wu.id).exists()
