"""db_purge's archive holds every column as the ORM reads it, written byte for byte in the
documented form; links other rows hold to purged ones are cleared; a pass's statements do
not grow with its workunits; and on PostgreSQL two passes at once archive each one once."""

from __future__ import annotations

import gzip
import json
from datetime import date, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.work.domain.states import FileDeleteState, SequenceState
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import InputSpec, workunits_purge
from apps.work.services.purge import archive_path, archive_read
from tests.backend.conftest import make_wu, report, results_of, send
from tests.factories import WorkSequenceFactory
from tests.threads import in_thread

LATER = timedelta(days=30)


def deleted_files(*wus: Workunit) -> None:
    Workunit.objects.filter(id__in=[wu.id for wu in wus]).update(file_delete_state=FileDeleteState.DONE)


def columns(row) -> dict:
    """Every column by attribute name as the ORM reads it, times in ISO 8601."""
    values = {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}
    return {k: v.isoformat() if isinstance(v, datetime | date) else v for k, v in values.items()}


def expected_line(wu: Workunit, archived_at: datetime) -> str:
    record = {
        "format": 1,
        "archived_at": archived_at.isoformat(),
        "workunit": columns(wu),
        "input_files": [
            {
                "name": r.file.name,
                "md5_cksum": r.file.md5_cksum,
                "nbytes": r.file.nbytes,
                "open_name": r.open_name,
            }
            for r in wu.file_refs.order_by("ordinal")
        ],
        "results": [
            {
                **columns(r),
                "output_files": [
                    {"name": f.name, "nbytes": f.nbytes, "md5_cksum": f.md5_cksum, "uploaded": f.uploaded}
                    for f in r.output_files.order_by("ordinal")
                ],
            }
            for r in wu.results.order_by("id")
        ],
    }
    return json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"


@pytest.mark.django_db
def test_an_archived_line_holds_every_column_as_the_orm_reads_it(project, app, version, hosts, now, tmp_path):
    (tmp_path / "in.dat").write_bytes(b"input")
    wu = make_wu(project, app, now, name="wu", inputs=(InputSpec(path=tmp_path / "in.dat", open_name="in"),))
    first, second = results_of(wu)
    send(first, hosts[0], version, now)
    report(first, now, output=b"out\n")
    Result.objects.filter(id=first.id).update(
        stderr_out='<stderr_txt>"é" \\ \x01</stderr_txt>', runtime_outlier=True
    )
    Workunit.objects.filter(id=wu.id).update(canonical_result=first, need_validate=True, keywords="a b")
    deleted_files(wu)
    wu.refresh_from_db()
    expected = expected_line(wu, now + LATER)

    workunits_purge(project=project, now=now + LATER, min_age_days=0)

    assert gzip.decompress(archive_path(project, (now + LATER).date()).read_bytes()).decode() == expected
    assert not Workunit.objects.filter(id=wu.id).exists()
    assert not OutputFile.objects.filter(result_id__in=[first.id, second.id]).exists()


@pytest.mark.django_db
def test_purging_a_sequences_last_step_clears_the_sequences_links_to_it(project, app, now):
    sequence = WorkSequenceFactory(app=app, state=SequenceState.ENDED)
    wu = make_wu(project, app, now, name="step")
    Workunit.objects.filter(id=wu.id).update(sequence_id=sequence.id, sequence_index=0)
    sequence.head_workunit = sequence.first_unvalidated = sequence.first_undispatched = wu
    sequence.checkpoint_result = results_of(wu)[0]
    sequence.save()
    deleted_files(wu)

    outcome = workunits_purge(project=project, now=now + LATER, min_age_days=0)

    sequence.refresh_from_db()
    assert outcome.items == 1
    links = ("head_workunit_id", "first_unvalidated_id", "first_undispatched_id", "checkpoint_result_id")
    assert [getattr(sequence, link) for link in links] == [None, None, None, None]


@pytest.mark.django_db
def test_a_step_of_a_sequence_that_has_not_ended_is_kept_until_it_ends(project, app, now):
    sequence = WorkSequenceFactory(app=app, state=SequenceState.ASSIGNED)
    wu = make_wu(project, app, now, name="step")
    Workunit.objects.filter(id=wu.id).update(sequence_id=sequence.id, sequence_index=0)
    deleted_files(wu)

    kept = workunits_purge(project=project, now=now + LATER, min_age_days=0)
    sequence.state = SequenceState.ENDED
    sequence.save()
    purged = workunits_purge(project=project, now=now + LATER, min_age_days=0)

    assert (kept.items, purged.items) == (0, 1)
    assert not Workunit.objects.filter(id=wu.id).exists()


def statements_of_a_pass(project, now) -> int:
    with CaptureQueriesContext(connection) as queries:
        outcome = workunits_purge(project=project, now=now + LATER, min_age_days=0)
    assert outcome.items > 0
    return len(queries)


@pytest.mark.django_db
def test_a_pass_over_five_workunits_takes_as_many_statements_as_over_one(project, app, now):
    deleted_files(make_wu(project, app, now, name="one"))
    one = statements_of_a_pass(project, now)
    deleted_files(*[make_wu(project, app, now, name=f"five-{i}") for i in range(5)])

    five = statements_of_a_pass(project, now)

    assert five == one
    assert not Workunit.objects.exists()


@pytest.mark.postgres
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_two_purges_at_once_archive_each_workunit_once(project, app, now):
    wus = [make_wu(project, app, now, name=f"wu{i}") for i in range(30)]
    deleted_files(*wus)

    def purge() -> None:
        for _ in range(20):
            workunits_purge(project=project, now=now + LATER, limit=4, min_age_days=0)

    workers = [in_thread(purge) for _ in range(2)]
    for thread, _ in workers:
        thread.join(60)

    assert [errors for _, errors in workers] == [[], []]
    names = [r["workunit"]["name"] for r in archive_read(archive_path(project, (now + LATER).date()))]
    assert sorted(names) == sorted(wu.name for wu in wus)
    assert not Workunit.objects.exists()
