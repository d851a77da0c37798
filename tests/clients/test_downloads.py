"""Downloads: exact bytes, Range resume, HEAD, gzip, refusals, counted 404s."""

from __future__ import annotations

import gzip
import os

import pytest

from apps.projects.models import DaemonRun
from apps.scheduler.transfer import ByteRange, RangeNotSatisfiable, accepts_gzip, byte_range

pytestmark = pytest.mark.django_db

DATA = bytes(range(256)) * 40  # 10 240 bytes


@pytest.fixture
def stored(project):
    path = project.download_dir / "in_1.dat"
    path.write_bytes(DATA)
    return path


def url(project, name: str) -> str:
    return f"/{project.slug}/download/{name}"


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_get_serves_the_exact_bytes_streamed(client, project, stored):
    response = client.get(url(project, stored.name))
    assert response.status_code == 200
    assert response.streaming is True  # never read whole into memory
    assert response["Content-Length"] == str(len(DATA))
    assert response["Accept-Ranges"] == "bytes"
    assert body(response) == DATA


def test_range_from_an_offset_resumes_with_206(client, project, stored):
    response = client.get(url(project, stored.name), HTTP_RANGE="bytes=4000-")
    assert response.status_code == 206
    assert response["Content-Range"] == f"bytes 4000-{len(DATA) - 1}/{len(DATA)}"
    assert response["Content-Length"] == str(len(DATA) - 4000)
    assert body(response) == DATA[4000:]


def test_bounded_range_sends_only_that_span(client, project, stored):
    response = client.get(url(project, stored.name), HTTP_RANGE="bytes=10-19")
    assert response.status_code == 206
    assert body(response) == DATA[10:20]
    assert response["Content-Range"] == f"bytes 10-19/{len(DATA)}"


def test_range_past_the_end_is_416(client, project, stored):
    response = client.get(url(project, stored.name), HTTP_RANGE=f"bytes={len(DATA)}-")
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{len(DATA)}"


def test_head_gives_the_size_without_a_body(client, project, stored):
    response = client.head(url(project, stored.name))
    assert response.status_code == 200
    assert response["Content-Length"] == str(len(DATA))
    assert response.content == b""


def test_gzip_companion_is_sent_encoded_when_the_client_accepts_it(client, project, stored):
    (project.download_dir / "in_1.dat.gz").write_bytes(gzip.compress(DATA))
    response = client.get(url(project, stored.name), HTTP_ACCEPT_ENCODING="deflate, gzip, br, zstd")
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert gzip.decompress(body(response)) == DATA  # the client's MD5 sees the original bytes
    assert "Accept-Encoding" in response["Vary"]


def test_gzip_is_not_used_without_accept_encoding_or_for_a_range(client, project, stored):
    (project.download_dir / "in_1.dat.gz").write_bytes(gzip.compress(DATA))
    plain = client.get(url(project, stored.name))
    assert not plain.has_header("Content-Encoding")
    assert body(plain) == DATA
    resumed = client.get(url(project, stored.name), HTTP_ACCEPT_ENCODING="gzip", HTTP_RANGE="bytes=100-")
    assert not resumed.has_header("Content-Encoding")
    assert body(resumed) == DATA[100:]


def test_stale_gzip_companion_is_ignored(client, project, stored):
    companion = project.download_dir / "in_1.dat.gz"
    companion.write_bytes(gzip.compress(b"old contents"))
    os.utime(companion, (stored.stat().st_mtime - 60, stored.stat().st_mtime - 60))
    response = client.get(url(project, stored.name), HTTP_ACCEPT_ENCODING="gzip")
    assert not response.has_header("Content-Encoding")
    assert body(response) == DATA


def test_gz_file_asked_for_by_name_is_sent_as_is(client, project, stored):
    packed = gzip.compress(DATA)
    (project.download_dir / "in_1.dat.gz").write_bytes(packed)
    response = client.get(url(project, "in_1.dat.gz"), HTTP_ACCEPT_ENCODING="gzip")
    assert not response.has_header("Content-Encoding")
    assert body(response) == packed


def test_missing_file_is_a_clean_404_counted_for_the_admin(client, project):
    for _ in range(2):
        response = client.get(url(project, "gone.dat"))
        assert response.status_code == 404
        assert response.content == b"File not found\n"
    run = DaemonRun.objects.get(project=project, daemon="download")
    assert run.errors == 2
    assert "gone.dat" in run.message


@pytest.mark.parametrize("name", ["../upload/secret", "sub/file", "%2e%2e/x", ".hidden", "..%2fx"])
def test_names_that_could_leave_the_download_area_are_refused(client, project, name):
    (project.upload_dir / "secret").write_bytes(b"private")
    (project.download_dir / ".hidden").write_bytes(b"private")
    response = client.get(url(project, name))
    assert response.status_code == 404
    assert b"private" not in response.content


def test_symlink_out_of_the_download_area_is_refused(client, project):
    (project.upload_dir / "secret").write_bytes(b"private")
    (project.download_dir / "link").symlink_to(project.upload_dir / "secret")
    assert client.get(url(project, "link")).status_code == 404


def test_unknown_project_is_a_404(client, db):
    assert client.get("/nope/download/x").status_code == 404


def test_post_is_not_allowed(client, project, stored):
    assert client.post(url(project, stored.name)).status_code == 405


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-", ByteRange(0, 99)),
        ("bytes=10-", ByteRange(10, 99)),
        ("bytes=10-20", ByteRange(10, 20)),
        ("bytes=90-500", ByteRange(90, 99)),
        ("bytes=-10", ByteRange(90, 99)),
        ("bytes=0-1,5-6", None),
        ("items=0-", None),
        ("bytes=abc-", None),
        ("bytes=20-10", None),
    ],
)
def test_byte_range(header, expected):
    assert byte_range(header, 100) == expected


def test_byte_range_past_the_end_is_unsatisfiable():
    with pytest.raises(RangeNotSatisfiable):
        byte_range("bytes=100-", 100)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("deflate, gzip, br, zstd", True),
        ("gzip;q=0", False),
        ("gzip;q=0.5", True),
        ("identity", False),
        ("", False),
    ],
)
def test_accepts_gzip(header, expected):
    assert accepts_gzip(header) is expected


def test_unexpected_failure_is_a_503_not_a_stack_trace(client, project, stored, monkeypatch):
    def broken(*args: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr("apps.scheduler.transfer._file_response", broken)
    response = client.get(url(project, stored.name))
    assert response.status_code == 503
    assert b"Traceback" not in response.content


def test_control_characters_in_a_refused_name_are_recorded_readably(client, project):
    assert client.get(url(project, "bad%00name")).status_code == 404
    assert DaemonRun.objects.get(project=project, daemon="download").message == "refused file name: bad?name"
