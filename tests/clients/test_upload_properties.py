"""Property tests: random, truncated and resumed uploads never store a wrong file as complete,
never write outside the upload area, and never make the handler answer 500."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.protocol import UploadStatus
from apps.work.models import OutputFile
from tests.clients.conftest import md5, post_upload, size_query, upload_body

pytestmark = pytest.mark.django_db

DATA = bytes(range(256)) * 64  # 16 KiB
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
STATUSES = {UploadStatus.OK, UploadStatus.TRANSIENT, UploadStatus.PERMANENT}

names = st.one_of(
    st.just("job_0_0"),
    st.sampled_from(
        ["../job_0_0", "../../etc/passwd", "/tmp/x", ".job_0_0.part", "a/../../b", "%2e%2e", "..", ""]
    ),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00<>&"), max_size=40),
)


def reset(output: OutputFile) -> None:
    """Each example starts from a fresh upload area and an output file not yet received."""
    for path in sorted(output.result.project.upload_dir.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    OutputFile.objects.filter(pk=output.pk).update(uploaded=False, nbytes=0, md5_cksum="", upload_time=None)


def files_outside_upload_area(project) -> list[Path]:
    data_root = project.data_dir.parent
    upload = project.upload_dir.resolve()
    return [p for p in data_root.rglob("*") if p.is_file() and upload not in p.resolve().parents]


def check_invariants(project, output: OutputFile, posted) -> None:
    assert posted.http_status == 200
    assert posted.reply.status in STATUSES
    assert files_outside_upload_area(project) == []
    output.refresh_from_db()
    final = project.upload_dir / output.name
    if output.uploaded:
        # Complete only with exactly the declared bytes.
        assert final.read_bytes() == DATA
        assert (output.nbytes, output.md5_cksum) == (len(DATA), md5(DATA))
    else:
        assert not final.exists()


@PROPERTY_SETTINGS
@given(body=st.binary(max_size=4096))
def test_random_bytes_are_answered_and_never_stored(client, project, output, body):
    reset(output)
    posted = post_upload(client, project, body)
    check_invariants(project, output, posted)
    assert output.uploaded is False


@PROPERTY_SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(DATA) - 1), data=st.data())
def test_truncated_uploads_are_never_stored_as_complete(client, project, output, cut, data):
    reset(output)
    full = upload_body(output, DATA)
    header_len = len(full) - len(DATA)
    end = data.draw(st.integers(min_value=0, max_value=header_len + cut))
    posted = post_upload(client, project, full[:end])
    check_invariants(project, output, posted)
    assert output.uploaded is False


@PROPERTY_SETTINGS
@given(
    name=names,
    offset=st.integers(min_value=0, max_value=2 * len(DATA)),
    nbytes=st.integers(min_value=0, max_value=2 * len(DATA)),
    md5_cksum=st.sampled_from(["", "0" * 32, md5(b"other"), "zz", md5(DATA).upper()]),
)
def test_forged_headers_are_never_stored_as_complete(
    client, project, output, name, offset, nbytes, md5_cksum
):
    reset(output)
    try:
        body = upload_body(
            output, DATA[offset:], whole=DATA, name=name, offset=offset, nbytes=nbytes, md5_cksum=md5_cksum
        )
    except Exception:
        body = f"<data_server_request><file_upload><file_info><name>{name}</name>".encode() + DATA
    posted = post_upload(client, project, body)
    check_invariants(project, output, posted)
    if md5_cksum != md5(DATA).upper() or nbytes != len(DATA) or offset:
        assert output.uploaded is False


@PROPERTY_SETTINGS
@given(
    chunks=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=len(DATA)),
            st.integers(min_value=0, max_value=len(DATA)),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_resumed_pieces_complete_only_with_the_exact_bytes(client, project, output, chunks):
    """Pieces at any offsets, some corrupted: the size query never exceeds the file, and a
    file marked complete holds exactly the client's bytes."""
    reset(output)
    for offset, length, corrupt in chunks:
        piece = DATA[offset : offset + length]
        if corrupt and piece:
            piece = bytes([piece[0] ^ 0xFF]) + piece[1:]
        posted = post_upload(client, project, upload_body(output, piece, whole=DATA, offset=offset))
        check_invariants(project, output, posted)
        size = post_upload(client, project, size_query(output.name)).reply.file_size
        assert size is not None
        assert 0 <= size <= len(DATA)
