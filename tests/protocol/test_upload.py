"""file_upload_handler protocol: header, size query, reply, certificate text, names."""

from __future__ import annotations

import pytest

from apps.protocol import (
    ClientVersion,
    FileSizeQuery,
    ProtocolError,
    UploadRequest,
    UploadStatus,
    find_upload_header_end,
    is_safe_file_name,
    parse_upload_header,
    parse_upload_reply,
    render_file_size_query,
    render_upload_header,
    render_upload_reply,
    upload_certificate_text,
)

HEADER = b"""<data_server_request>
    <core_client_major_version>7</core_client_major_version>
    <core_client_minor_version>20</core_client_minor_version>
    <core_client_release>5</core_client_release>
<file_upload>
<file_info>
<name>job1_0_r0_out</name>
<xml_signature>
5e1f77aa
.</xml_signature>
<max_nbytes>100000</max_nbytes>
</file_info>
<nbytes>12</nbytes>
<md5_cksum>d533b16cb509e0614cb307fa6494b7eb</md5_cksum>
<offset>0</offset>
<data>
"""
BODY = HEADER + b"HELLO BOINC\n"


def header_with(**replace: str) -> bytes:
    text = HEADER.decode()
    for tag, value in replace.items():
        start = text.index(f"<{tag}>") + len(tag) + 2
        text = text[:start] + value + text[text.index(f"</{tag}>") :]
    return text.encode()


def test_upload_header_from_the_doc():
    request = parse_upload_header(BODY)

    assert request == UploadRequest(
        name="job1_0_r0_out",
        max_nbytes=100000,
        nbytes=12,
        md5_cksum="d533b16cb509e0614cb307fa6494b7eb",
        offset=0,
        xml_signature="5e1f77aa\n.",
        data_offset=len(HEADER),
        client_version=ClientVersion(7, 20, 5),
    )
    assert BODY[request.data_offset :] == b"HELLO BOINC\n"


def test_render_upload_header_is_byte_identical_to_the_client():
    assert render_upload_header(parse_upload_header(BODY)) == HEADER


def test_find_header_end_in_a_growing_prefix():
    assert find_upload_header_end(BODY[:100]) is None
    assert find_upload_header_end(BODY) == len(HEADER)
    with pytest.raises(ProtocolError):
        find_upload_header_end(b"x" * 200, max_header_bytes=100)


def test_size_query():
    query = parse_upload_header(render_file_size_query("job1_0_r0_out", ClientVersion(7, 20, 5)))

    assert query == FileSizeQuery("job1_0_r0_out", ClientVersion(7, 20, 5))


@pytest.mark.parametrize("name", ["../x", "a/b", "%2e%2e", "..", "", "a\\b", "x\x01"])
def test_unsafe_upload_names_are_refused(name):
    with pytest.raises(ProtocolError):
        parse_upload_header(header_with(name=name.replace("\x01", "&#1;")) + b"data")


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("job1_0_r0_out", True),
        ("worker_1.00_x86_64-pc-linux-gnu", True),
        ("a.b.c", True),
        (".hidden", True),
        ("../x", False),
        ("a/b", False),
        ("%2e%2e", False),
        ("a..b", False),
        (".", False),
        ("", False),
        ("a\\b", False),
        ("tab\tname", False),
        ("x" * 255, True),
        ("x" * 256, False),
    ],
)
def test_is_safe_file_name(name, safe):
    assert is_safe_file_name(name) is safe


@pytest.mark.parametrize(
    "fields",
    [{"nbytes": ""}, {"nbytes": "-1"}, {"offset": "13"}, {"max_nbytes": "nan"}, {"nbytes": "1e300"}],
)
def test_bad_upload_numbers_are_refused(fields):
    with pytest.raises(ProtocolError):
        parse_upload_header(header_with(**fields))


def test_header_without_file_upload_is_refused():
    with pytest.raises(ProtocolError):
        parse_upload_header(b"<data_server_request>\n<data>\nxx")


def test_truncated_headers_are_refused_or_incomplete():
    for cut in range(len(HEADER)):
        with pytest.raises(ProtocolError):
            parse_upload_header(HEADER[:cut])


def test_upload_reply_forms():
    assert render_upload_reply(0) == b"<data_server_reply>\n    <status>0</status>\n</data_server_reply>\n"
    assert parse_upload_reply(render_upload_reply(0, file_size=4096)).file_size == 4096
    failed = parse_upload_reply(render_upload_reply(UploadStatus.PERMANENT, "bad file name"))
    assert (failed.status, failed.message) == (-1, "bad file name")
    assert parse_upload_reply(b"<data_server_reply></data_server_reply>").status == UploadStatus.TRANSIENT


def test_upload_certificate_text_prints_max_nbytes_as_integer():
    assert upload_certificate_text("job1_0_r0_out", 100000.0) == (
        "<name>job1_0_r0_out</name><max_nbytes>100000</max_nbytes>"
    )
    assert upload_certificate_text("f", 1e9) == "<name>f</name><max_nbytes>1000000000</max_nbytes>"
    with pytest.raises(ProtocolError):
        upload_certificate_text("f", float("inf"))
