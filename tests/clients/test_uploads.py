"""file_upload_handler: size queries, streamed and resumed uploads, refusals."""

from __future__ import annotations

import pytest

from apps.projects.models import DaemonRun
from apps.protocol import UploadStatus
from apps.scheduler.transfer import partial_path
from apps.work.domain.states import ErrorMask, FileDeleteState, Outcome, ServerState
from apps.work.models import OutputFile, Result
from tests.clients.conftest import md5, post_upload, size_query, upload_body

pytestmark = pytest.mark.django_db

DATA = b"HELLO BOINC\n" * 1000  # 12 000 bytes: big enough for the client's size query


def stored(project, name: str):
    return project.upload_dir / name


def partial(project, name: str):
    return partial_path(project, name)


def test_complete_upload_is_stored_and_recorded(client, project, output):
    posted = post_upload(client, project, upload_body(output, DATA))
    assert (posted.http_status, posted.reply.status) == (200, UploadStatus.OK)
    assert stored(project, output.name).read_bytes() == DATA
    assert not partial(project, output.name).exists()
    output.refresh_from_db()
    assert output.uploaded is True
    assert (output.nbytes, output.md5_cksum) == (len(DATA), md5(DATA))
    assert output.upload_time is not None


def test_size_query_answers_zero_then_the_partial_size_then_the_full_size(client, project, output):
    assert post_upload(client, project, size_query(output.name)).reply.file_size == 0
    post_upload(client, project, upload_body(output, DATA[:5000], whole=DATA))
    assert post_upload(client, project, size_query(output.name)).reply.file_size == 5000
    post_upload(client, project, upload_body(output, DATA[5000:], whole=DATA, offset=5000))
    assert post_upload(client, project, size_query(output.name)).reply.file_size == len(DATA)


def test_interrupted_upload_is_kept_partial_and_resumes_at_the_offset(client, project, output):
    first = post_upload(client, project, upload_body(output, DATA[:7000], whole=DATA))
    assert first.reply.status == UploadStatus.TRANSIENT
    output.refresh_from_db()
    assert output.uploaded is False
    assert not stored(project, output.name).exists()
    assert partial(project, output.name).stat().st_size == 7000

    second = post_upload(client, project, upload_body(output, DATA[7000:], whole=DATA, offset=7000))
    assert second.reply.status == UploadStatus.OK
    assert stored(project, output.name).read_bytes() == DATA
    output.refresh_from_db()
    assert output.uploaded is True


def test_resume_at_an_earlier_offset_truncates_what_was_beyond_it(client, project, output):
    post_upload(client, project, upload_body(output, DATA[:6000] + b"Z" * 5000, whole=DATA))
    post_upload(client, project, upload_body(output, DATA[6000:8000], whole=DATA, offset=6000))
    assert post_upload(client, project, size_query(output.name)).reply.file_size == 8000
    posted = post_upload(client, project, upload_body(output, DATA[8000:], whole=DATA, offset=8000))
    assert posted.reply.status == UploadStatus.OK
    assert stored(project, output.name).read_bytes() == DATA


def test_corrupted_partial_is_dropped_so_the_next_attempt_starts_over(client, project, output):
    post_upload(client, project, upload_body(output, b"x" * 9000, whole=DATA))  # garbage, cut short
    posted = post_upload(client, project, upload_body(output, DATA[9000:], whole=DATA, offset=9000))
    assert posted.reply.status == UploadStatus.TRANSIENT  # the MD5 of the whole does not match
    assert not partial(project, output.name).exists()
    assert post_upload(client, project, size_query(output.name)).reply.file_size == 0
    assert post_upload(client, project, upload_body(output, DATA)).reply.status == UploadStatus.OK


def test_offset_past_the_stored_bytes_is_a_transient_error(client, project, output):
    posted = post_upload(client, project, upload_body(output, DATA[500:], whole=DATA, offset=500))
    assert posted.reply.status == UploadStatus.TRANSIENT
    assert "ask again" in posted.reply.message
    assert partial(project, output.name).stat().st_size == 0


def test_md5_mismatch_is_never_stored_as_complete(client, project, output):
    posted = post_upload(client, project, upload_body(output, DATA, md5_cksum="0" * 32))
    assert posted.reply.status == UploadStatus.TRANSIENT
    output.refresh_from_db()
    assert output.uploaded is False
    assert not stored(project, output.name).exists()
    assert not partial(project, output.name).exists()


def test_file_over_its_limit_is_refused(client, project, output):
    big = b"y" * (output.max_nbytes + 1)
    posted = post_upload(client, project, upload_body(output, big))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert "limit" in posted.reply.message
    assert not stored(project, output.name).exists()


def test_header_cannot_raise_the_limit_when_certificates_are_ignored(client, project, output):
    project.ignore_upload_certificates = True
    project.save()
    big = b"y" * (output.max_nbytes + 1)
    posted = post_upload(client, project, upload_body(output, big, max_nbytes=10**9, signature="bogus"))
    assert posted.reply.status == UploadStatus.PERMANENT


def test_bad_certificate_is_refused(client, project, output, settings):
    posted = post_upload(client, project, upload_body(output, DATA, signature="00ff\n.\n"))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert "xml_signature" in posted.reply.message
    assert not stored(project, output.name).exists()


def test_certificate_for_another_limit_is_refused(client, project, output):
    posted = post_upload(client, project, upload_body(output, DATA, max_nbytes=output.max_nbytes * 10))
    assert posted.reply.status == UploadStatus.PERMANENT


def test_certificates_are_not_checked_when_the_project_ignores_them(client, project, output):
    project.ignore_upload_certificates = True
    project.save()
    posted = post_upload(client, project, upload_body(output, DATA, signature="whatever"))
    assert posted.reply.status == UploadStatus.OK


def test_unknown_file_is_refused(client, project, output):
    posted = post_upload(client, project, upload_body(output, DATA, name="nobody_0_0"))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert post_upload(client, project, size_query("nobody_0_0")).reply.status == UploadStatus.PERMANENT


@pytest.mark.parametrize("name", ["../escape", "a/b", "..", "%2e%2e", ".job_0_0.part", "bad\nname"])
def test_names_that_could_leave_the_upload_area_are_refused(client, project, output, name):
    posted = post_upload(client, project, upload_body(output, DATA, name=name))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert sorted(p.name for p in project.data_dir.rglob("*") if p.is_file()) == []


def test_upload_for_a_timed_out_result_is_still_taken(client, project, output):
    # BOINC keeps a late result ("late in arriving, but keep it anyhow"); the report that
    # follows the upload is kept too, so the work can still validate and earn credit.
    output.result.server_state = ServerState.OVER
    output.result.outcome = Outcome.NO_REPLY
    output.result.save()
    assert post_upload(client, project, size_query(output.name)).reply.status == UploadStatus.OK
    assert post_upload(client, project, upload_body(output, DATA)).reply.status == UploadStatus.OK
    output.refresh_from_db()
    assert output.uploaded is True


def test_upload_for_a_result_the_server_withdrew_is_refused(client, project, output):
    output.result.server_state = ServerState.OVER
    output.result.outcome = Outcome.DIDNT_NEED
    output.result.save()
    posted = post_upload(client, project, upload_body(output, DATA))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert post_upload(client, project, size_query(output.name)).reply.status == UploadStatus.PERMANENT


def test_upload_for_a_cancelled_job_is_refused(client, project, output):
    workunit = output.result.workunit
    workunit.error_mask = ErrorMask.CANCELLED
    workunit.save()
    posted = post_upload(client, project, upload_body(output, DATA))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert "cancelled" in posted.reply.message


def test_late_upload_of_a_timed_out_result_is_welcome_until_its_files_are_deleted(client, project, output):
    result = output.result
    result.server_state, result.outcome = ServerState.OVER, Outcome.NO_REPLY
    result.save()
    assert post_upload(client, project, size_query(output.name)).reply.status == UploadStatus.OK
    result.file_delete_state = FileDeleteState.READY
    result.save()
    posted = post_upload(client, project, upload_body(output, DATA))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert "no longer accepted" in posted.reply.message
    assert not stored(project, output.name).exists()


def test_repeated_upload_of_a_stored_file_is_acknowledged(client, project, output):
    post_upload(client, project, upload_body(output, DATA))
    again = post_upload(client, project, upload_body(output, DATA))
    assert again.reply.status == UploadStatus.OK
    other = post_upload(client, project, upload_body(output, DATA[::-1]))
    assert other.reply.status == UploadStatus.PERMANENT
    assert stored(project, output.name).read_bytes() == DATA


def test_body_is_streamed_not_parsed_as_a_form(client, project, output, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024  # request.body or request.POST would refuse this
    output.max_nbytes = 10**7
    output.save()
    project.ignore_upload_certificates = True
    project.save()
    data = (b"a=1&b=2%ZZ&" * 500_000)[: 5 * 1024 * 1024]
    posted = post_upload(client, project, upload_body(output, data))
    assert posted.reply.status == UploadStatus.OK
    assert stored(project, output.name).stat().st_size == len(data)


def test_garbage_is_a_permanent_error_not_a_500(client, project):
    posted = post_upload(client, project, b"\x00\xffnot xml at all")
    assert (posted.http_status, posted.reply.status) == (200, UploadStatus.PERMANENT)


def test_unexpected_failure_is_a_transient_error_and_is_counted(client, project, output, monkeypatch):
    def broken(**kwargs: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr("apps.scheduler.transfer.output_file_mark_uploaded", broken)
    posted = post_upload(client, project, upload_body(output, DATA))
    assert (posted.http_status, posted.reply.status) == (200, UploadStatus.TRANSIENT)
    output.refresh_from_db()
    assert output.uploaded is False
    assert DaemonRun.objects.get(project=project, daemon="upload").errors == 1


def test_a_file_whose_row_went_while_it_came_in_is_refused_and_not_kept(client, project, output, monkeypatch):
    """The workunit was purged during a long upload: nothing would ever delete the file."""
    from apps.scheduler import transfer

    write = transfer._write_at

    def purged_meanwhile(*args, **kwargs):
        written = write(*args, **kwargs)
        OutputFile.objects.filter(id=output.id).delete()
        return written

    monkeypatch.setattr(transfer, "_write_at", purged_meanwhile)
    posted = post_upload(client, project, upload_body(output, DATA))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert not stored(project, output.name).exists()
    assert not partial(project, output.name).exists()


def test_a_file_whose_result_went_to_the_file_deleter_while_it_came_in_is_refused_and_not_kept(
    client, project, output, monkeypatch
):
    """The file deleter may have been through already: a file stored now would never go."""
    from apps.scheduler import transfer

    write = transfer._write_at

    def handed_over_meanwhile(*args, **kwargs):
        written = write(*args, **kwargs)
        Result.objects.filter(id=output.result_id).update(file_delete_state=FileDeleteState.READY)
        return written

    monkeypatch.setattr(transfer, "_write_at", handed_over_meanwhile)
    posted = post_upload(client, project, upload_body(output, DATA))
    assert posted.reply.status == UploadStatus.PERMANENT
    assert not stored(project, output.name).exists()
    output.refresh_from_db()
    assert output.uploaded is False


def test_get_is_405_with_a_permanent_status(client, project):
    response = client.get(f"/{project.slug}/file_upload_handler")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert b"<status>-1</status>" in response.content


def test_unknown_project_is_a_404_with_a_permanent_status(client, db):
    response = client.post("/nope/file_upload_handler", data=b"x", content_type="text/plain")
    assert response.status_code == 404
    assert b"<status>-1</status>" in response.content


def test_partial_files_are_hidden_and_fit_any_allowed_name(project):
    assert partial_path(project, "job_0_0").name == ".job_0_0.part"
    long_name = "n" * 255
    assert len(partial_path(project, long_name).name) == len(".") + 32 + len(".part")
