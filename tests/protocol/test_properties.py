"""Property tests: parsers return a message or raise ProtocolError, nothing else; round trips."""

from __future__ import annotations

import contextlib
import os
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lxml import etree

from apps.core.domain.resources import ProcType
from apps.protocol import (
    FileSizeQuery,
    ProtocolError,
    SchedulerReply,
    SchedulerRequest,
    UploadRequest,
    is_safe_file_name,
    parse_reply,
    parse_request,
    parse_upload_header,
    render_reply,
    render_request,
    reply_from_dict,
    reply_to_dict,
    request_from_dict,
    request_to_dict,
    xmlsafe,
)
from tests.protocol.helpers import MAX, REQUEST_FILES, load
from tests.protocol.strategies import message_dict, text
from tests.protocol.test_upload import HEADER

# PROTOCOL_EXAMPLES=5000 for a long bug hunt; the default keeps the suite quick.
SETTINGS = settings(
    max_examples=int(os.environ.get("PROTOCOL_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
GOLDEN = [load(name) for name in REQUEST_FILES]
XML_TOKENS = [
    "<scheduler_request>",
    "</scheduler_request>",
    "<result>",
    "</result>",
    "<name>",
    "</name>",
    "<host_info>",
    "</host_info>",
    "<p_ncpus>",
    "</p_ncpus>",
    "<coprocs>",
    "<coproc_cuda>",
    "</coproc_cuda>",
    "<req_secs>",
    "</req_secs>",
    "<![CDATA[",
    "]]>",
    "<!DOCTYPE x>",
    "<!ENTITY e 'x'>",
    "&amp;",
    "&e;",
    "&#0;",
    "<?xml version='1.0'?>",
    "<!--",
    "-->",
    "1e9",
    "nan",
    "-1",
    "  ",
    "\n",
    "<",
    ">",
    "/",
    "x",
    "\u00e9",
    "\x00",
]


def parses_or_refuses(body: bytes) -> None:
    try:
        result = parse_request(body, max_bytes=MAX)
    except ProtocolError:
        return
    assert isinstance(result, SchedulerRequest)


@SETTINGS
@given(st.binary(max_size=2000))
def test_random_bytes(body):
    parses_or_refuses(body)


@SETTINGS
@given(st.lists(st.sampled_from(XML_TOKENS), max_size=60).map("".join))
def test_random_xml_like_text(text_body):
    parses_or_refuses(text_body.encode("utf-8", "surrogatepass"))


@st.composite
def mutated_golden(draw):
    body = bytearray(draw(st.sampled_from(GOLDEN)))
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, len(body)))
        action = draw(st.sampled_from(["replace", "delete", "insert", "duplicate"]))
        if action == "replace" and position < len(body):
            body[position] = draw(st.integers(0, 255))
        elif action == "delete":
            del body[position : position + draw(st.integers(1, 200))]
        elif action == "insert":
            body[position:position] = draw(st.binary(min_size=1, max_size=20))
        else:
            end = min(len(body), position + draw(st.integers(1, 400)))
            body[position:position] = body[position:end]
    return bytes(body)


@SETTINGS
@given(mutated_golden())
def test_mutated_golden_requests(body):
    parses_or_refuses(body)


_LEAF = re.compile(rb"(<([a-z_]+)>)([^<]*)(</\2>)")


@st.composite
def golden_with_bad_value(draw):
    body = draw(st.sampled_from(GOLDEN))
    leaves = list(_LEAF.finditer(body))
    match = draw(st.sampled_from(leaves))
    value = draw(
        st.one_of(
            st.sampled_from(
                [b"", b"nan", b"-inf", b"1e308", b"-1", b"2147483648", b"0x1F", b" 3 ", b"1.5", b"&lt;"]
            ),
            st.binary(max_size=12).filter(lambda b: b"<" not in b),
        )
    )
    return body[: match.start(3)] + value + body[match.end(3) :]


@SETTINGS
@given(golden_with_bad_value())
def test_golden_with_random_field_value(body):
    parses_or_refuses(body)


@SETTINGS
@given(message_dict(SchedulerRequest, client=True))
def test_generated_request_round_trips_through_xml_and_json(data):
    request = request_from_dict(data)

    assert parse_request(render_request(request), max_bytes=MAX) == request
    assert request_from_dict(request_to_dict(request)) == request


@SETTINGS
@given(message_dict(SchedulerReply, client=False))
def test_generated_reply_round_trips_through_xml_and_json(data):
    reply = reply_from_dict(data)
    assume(all(f.max_nbytes for f in reply.file_infos if f.upload_urls))

    assert parse_reply(render_reply(reply)) == reply
    assert reply_from_dict(reply_to_dict(reply)) == reply


@SETTINGS
@given(st.binary(max_size=3000))
def test_random_bytes_as_reply(body):
    with contextlib.suppress(ProtocolError):
        assert isinstance(parse_reply(body), SchedulerReply)


def parse_header_or_refuse(body: bytes) -> None:
    try:
        result = parse_upload_header(body)
    except ProtocolError:
        return
    assert isinstance(result, UploadRequest | FileSizeQuery)
    assert is_safe_file_name(result.name)


@SETTINGS
@given(st.binary(max_size=600), st.booleans())
def test_random_upload_headers(body, with_marker):
    parse_header_or_refuse(body + (b"<data>\n" if with_marker else b""))


@SETTINGS
@given(st.integers(0, len(HEADER)), st.binary(max_size=30))
def test_truncated_or_spliced_upload_headers(cut, junk):
    parse_header_or_refuse(HEADER[:cut] + junk + HEADER[cut:])


@SETTINGS
@given(st.one_of(text(), st.sampled_from(["../x", "a/b", "%2e%2e", "..", "a\\b", "..%2f", "x/../y"])))
def test_upload_names_are_returned_only_when_safe(name):
    body = HEADER.replace(
        b"job1_0_r0_out", name.encode("utf-8").replace(b"&", b"&amp;").replace(b"<", b"&lt;")
    )
    try:
        request = parse_upload_header(body)
    except ProtocolError:
        assert not is_safe_file_name(name.strip())
        return
    assert request.name == name.strip()
    assert is_safe_file_name(request.name)


@pytest.mark.parametrize("proc_type", [p for p in ProcType if p is not ProcType.CPU])
def test_every_gpu_type_round_trips(proc_type):
    request = request_from_dict({"coprocs": [{"type": proc_type.value, "count": 1, "req_secs": 5}]})

    assert parse_request(render_request(request), max_bytes=MAX).coprocs[0].type is proc_type


def parse_outcome(body: bytes, *, max_depth: int) -> str:
    """The parsed tree as XML text, or the error message: what a caller can observe."""
    try:
        document = xmlsafe.parse_document(body, root="scheduler_request", max_bytes=MAX, max_depth=max_depth)
    except ProtocolError as exc:
        return f"error: {exc}"
    return etree.tostring(document, encoding="unicode")


@SETTINGS
@given(
    st.one_of(
        mutated_golden(),
        st.sampled_from(GOLDEN).map(lambda body: body.replace(b"scheduler_request>", b"scheduler_reply>")),
        st.lists(st.sampled_from(XML_TOKENS), max_size=60).map(
            lambda tokens: "".join(tokens).encode("utf-8", "surrogatepass")
        ),
    ),
    st.sampled_from([3, 32]),
)
def test_one_shot_parse_agrees_with_the_stream(body, max_depth):
    # parse_document parses small bodies in one call and checks afterwards; the stream
    # checks element by element. Same tree or same error, whichever runs.
    fast = parse_outcome(body, max_depth=max_depth)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(xmlsafe, "_parse_whole", lambda *args: None)
        streamed = parse_outcome(body, max_depth=max_depth)
    assert fast == streamed
