"""Hostile inputs: every parser answers ProtocolError, never another exception."""

from __future__ import annotations

import time

import pytest

from apps.protocol import (
    ProtocolError,
    parse_account_reply,
    parse_app_info,
    parse_input_template,
    parse_output_template,
    parse_project_config,
    parse_reply,
    parse_request,
    parse_upload_header,
    request_from_dict,
)
from tests.protocol.helpers import MAX, load

_LOL = "".join(
    f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' if i else '<!ENTITY lol0 "lol">' for i in range(10)
)
BILLION_LAUGHS = (
    f'<?xml version="1.0"?><!DOCTYPE lolz [{_LOL}]><scheduler_request>&lol9;</scheduler_request>'.encode()
)
XXE = (
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "http://169.254.169.254/latest/meta-data/">]>'
    b"<scheduler_request><authenticator>&x;</authenticator></scheduler_request>"
)
XXE_FILE = b'<!DOCTYPE r SYSTEM "file:///etc/passwd"><scheduler_request/>'
DOCTYPE_AFTER_COMMENT = (
    b'<!-- <a --><!DOCTYPE scheduler_request [<!ENTITY e "x">]><scheduler_request>&e;</scheduler_request>'
)
DEEP = b"<scheduler_request>" + b"<a>" * 10000 + b"</a>" * 10000 + b"</scheduler_request>"
MODERATELY_DEEP = b"<scheduler_request>" + b"<a>" * 40 + b"</a>" * 40 + b"</scheduler_request>"
WIDE = b"<scheduler_request>" + b"<a/>" * 100_001 + b"</scheduler_request>"
HOSTILE = {
    "billion laughs": BILLION_LAUGHS,
    "external entity (SSRF)": XXE,
    "external DTD": XXE_FILE,
    "DOCTYPE hidden after a comment": DOCTYPE_AFTER_COMMENT,
    "10000-deep nesting": DEEP,
    "41-deep nesting": MODERATELY_DEEP,
    "too many elements": WIDE,
    "wrong root": b"<scheduler_reply></scheduler_reply>",
    "truncated": load("request_report.xml")[:3000],
    "empty": b"",
    "not xml": b"hello",
    "two roots": b"<scheduler_request/><scheduler_request/>",
    "NaN": b"<scheduler_request><cpu_req_secs>NaN</cpu_req_secs></scheduler_request>",
    "negative count": b"<scheduler_request><host_info><p_ncpus>-4</p_ncpus></host_info></scheduler_request>",
    "1e308 flops": b"<scheduler_request><host_info><p_fpops>1e308</p_fpops></host_info></scheduler_request>",
    "negative hostid": b"<scheduler_request><hostid>-7</hostid></scheduler_request>",
    "UTF-16": "<scheduler_request/>".encode("utf-16"),
    "undeclared entity": b"<scheduler_request>&nbsp;</scheduler_request>",
    "processing-instruction only": b"<?xml version='1.0'?>",
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_request_gives_protocol_error(body):
    with pytest.raises(ProtocolError):
        parse_request(body, max_bytes=MAX)


def test_latin1_bytes_in_stderr_are_replaced_not_refused():
    # An app's stderr is copied verbatim by the client; refusing it would make the
    # client resend the same unparseable report forever.
    body = load("request_report.xml").replace(b"<stderr_txt>", b"<stderr_txt>caf\xe9 ", 1)
    request = parse_request(body, max_bytes=MAX)
    assert "caf\ufffd " in request.results[0].stderr_out


def test_body_over_the_limit_is_refused_before_parsing():
    body = b"<scheduler_request>" + b" " * (10 * 1024 * 1024) + b"</scheduler_request>"

    start = time.monotonic()
    with pytest.raises(ProtocolError, match="limit"):
        parse_request(body, max_bytes=1024 * 1024)
    assert time.monotonic() - start < 1.0


def test_billion_laughs_is_refused_quickly():
    start = time.monotonic()
    with pytest.raises(ProtocolError, match="DOCTYPE"):
        parse_request(BILLION_LAUGHS, max_bytes=MAX)
    assert time.monotonic() - start < 1.0


def test_doctype_after_comment_is_caught_on_first_element():
    with pytest.raises(ProtocolError, match="DOCTYPE"):
        parse_request(DOCTYPE_AFTER_COMMENT, max_bytes=MAX)


def test_depth_bound_is_inclusive_of_real_requests():
    parse_request(
        b"<scheduler_request>" + b"<a>" * 30 + b"</a>" * 30 + b"</scheduler_request>", max_bytes=MAX
    )


def test_non_bytes_body_is_refused():
    with pytest.raises(ProtocolError):
        parse_request("<scheduler_request/>", max_bytes=MAX)


def test_doctype_text_inside_cdata_is_fine():
    body = (
        b"<scheduler_request><result><name>r</name><stderr_out><![CDATA[<!DOCTYPE html>]]>"
        b"</stderr_out></result></scheduler_request>"
    )

    assert parse_request(body, max_bytes=MAX).results[0].stderr_out == "<!DOCTYPE html>"


OTHER_PARSERS = {
    "reply": lambda b: parse_reply(b, max_bytes=MAX),
    "project_config": parse_project_config,
    "account": parse_account_reply,
    "app_info": parse_app_info,
    "input_template": parse_input_template,
    "output_template": parse_output_template,
    "upload_header": parse_upload_header,
}


@pytest.mark.parametrize("parser", OTHER_PARSERS.values(), ids=OTHER_PARSERS.keys())
@pytest.mark.parametrize(
    "body",
    [BILLION_LAUGHS, XXE, DEEP, b"\xff\xfe", b"<x>", b""],
    ids=["lol", "xxe", "deep", "bytes", "open", "empty"],
)
def test_every_parser_refuses_hostile_xml(parser, body):
    with pytest.raises(ProtocolError):
        parser(body)


@pytest.mark.parametrize(
    "data",
    [
        [],
        {"hostid": "x"},
        {"hostid": True},
        {"hostid": 1.5},
        {"cpu_req_secs": float("nan")},
        {"host_info": {"p_fpops": float("inf")}},
        {"host_info": {"p_ncpus": -1}},
        {"host_info": []},
        {"results": {}},
        {"results": [{"state": 5}]},
        {"coprocs": [{"type": "tpu"}]},
        {"coprocs": [{"type": "CPU"}]},
        {"coprocs": [{"type": "CUDA", "properties": [["a"]]}]},
        {"authenticator": 5},
        {"alt_platforms": [1]},
        {"working_global_prefs": {"raw": "<unclosed>"}},
        {"working_global_prefs": {"raw": '<!DOCTYPE x [<!ENTITY e "y">]>'}},
        {"trickle_ups": [{"body": 3}]},
        {"hostid": 10**400},
    ],
)
def test_bad_json_gives_protocol_error(data):
    with pytest.raises(ProtocolError):
        request_from_dict(data)
