"""Request semantics: lenient numbers, ranges, optional lists, WORK_REQ, the extension."""

from __future__ import annotations

import pytest

from apps.core.domain.resources import ProcType
from apps.protocol import ProtocolError, parse_request, render_request
from tests.protocol.helpers import MAX


def req(inner: str) -> bytes:
    return f"<scheduler_request>{inner}</scheduler_request>".encode()


def parse(inner: str):
    return parse_request(req(inner), max_bytes=MAX)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1e9", 1e9), (" 2 ", 2.0), ("7.000000", 7.0), ("+3", 3.0), (".5", 0.5), ("", 0.0)],
)
def test_numbers_are_read_leniently(text, expected):
    assert parse(f"<host_info><p_fpops>{text}</p_fpops></host_info>").host_info.p_fpops == expected


@pytest.mark.parametrize(
    "text", ["nan", "NaN", "inf", "-inf", "1e400", "0x10", "1_000", "abc", "\uff11\uff12", "1e308"]
)
def test_bad_or_insane_numbers_are_refused(text):
    with pytest.raises(ProtocolError):
        parse(f"<host_info><p_fpops>{text}</p_fpops></host_info>")


@pytest.mark.parametrize(
    "inner",
    [
        "<hostid>-1</hostid>",
        "<hostid>2147483648</hostid>",
        "<hostid>7.5</hostid>",
        "<host_info><p_ncpus>-2</p_ncpus></host_info>",
        "<time_stats><on_frac>-0.1</on_frac></time_stats>",
        "<result><name>r</name><state>99</state></result>",
        "<coprocs><coproc_cuda><count>-1</count></coproc_cuda></coprocs>",
    ],
)
def test_values_outside_sane_ranges_are_refused(inner):
    with pytest.raises(ProtocolError):
        parse(inner)


def test_share_fractions_above_one_are_accepted():
    # The stock client divides by the share of projects with runnable work only, so a
    # newly attached project (none yet) sends e.g. 2.0 (cs_scheduler.cpp).
    request = parse("<rrs_fraction>2.000000</rrs_fraction><prrs_fraction>3.5</prrs_fraction>")
    assert (request.rrs_fraction, request.prrs_fraction) == (2.0, 3.5)


def test_integer_written_as_float_is_accepted():
    assert parse("<hostid>7.000000</hostid><rpc_seqno>1e1</rpc_seqno>").rpc_seqno == 10


def test_unknown_tags_are_ignored():
    request = parse("<new_thing><deep>1</deep></new_thing><authenticator>k</authenticator><junk/>")

    assert request.authenticator == "k"


def test_strings_are_stripped_and_unescaped():
    request = parse("<authenticator>\n  a&amp;b&lt;c  \n</authenticator>")

    assert request.authenticator == "a&b<c"


def test_boolean_forms():
    request = parse("<dont_send_work/><sandbox>1</sandbox><allow_multiple_clients>0</allow_multiple_clients>")

    assert (request.dont_send_work, request.sandbox, request.allow_multiple_clients) == (True, True, False)


def test_reported_result_needs_a_name():
    with pytest.raises(ProtocolError):
        parse("<result><state>5</state></result>")


def test_other_results_absent_differs_from_empty():
    assert parse("").other_results is None
    assert parse("<other_results></other_results>").other_results == ()


def test_legacy_request_uses_work_req_seconds():
    work = parse("<work_req_seconds>100</work_req_seconds>").work_request

    assert work.rsc_spec_request is False
    assert work.needs(ProcType.CPU) is True
    assert work.needs(ProcType.NVIDIA) is False


def test_legacy_request_with_nothing_asked_needs_nothing():
    assert parse("").work_request.wants_work is False


def test_gpu_only_request_is_new_style():
    work = parse(
        "<coprocs><coproc_ati><count>2</count><req_secs>50</req_secs><req_instances>0</req_instances>"
        "</coproc_ati></coprocs>"
    ).work_request

    assert work.rsc_spec_request is True
    assert work.needed_types == (ProcType.ATI,)


def test_coproc_req_secs_are_clamped():
    request = parse("<coprocs><coproc_cuda><count>1</count><req_secs>1e20</req_secs></coproc_cuda></coprocs>")

    assert request.coprocs[0].req_secs == 2419200.0


def test_generic_and_unknown_coprocs():
    request = parse(
        "<coprocs><coproc><type>apple_gpu</type><count>1</count></coproc>"
        "<coproc_quantum><count>1</count></coproc_quantum><coproc><type>tpu</type></coproc></coprocs>"
    )

    assert [c.type for c in request.coprocs] == [ProcType.APPLE_GPU]


def test_coprocs_inside_host_info_are_used_when_top_level_is_absent():
    request = parse(
        "<host_info><coprocs><coproc_intel_gpu><count>1</count></coproc_intel_gpu></coprocs></host_info>"
    )

    assert request.coprocs[0].type is ProcType.INTEL_GPU


def test_app_version_with_unknown_coproc_type_is_refused():
    with pytest.raises(ProtocolError):
        parse(
            "<app_versions><app_version><app_name>a</app_name><coproc><type>tpu</type></coproc></app_version></app_versions>"
        )


def test_other_result_index_outside_app_versions_gives_none():
    request = parse(
        "<other_results><other_result><name>x</name><app_version>3</app_version></other_result></other_results>"
    )

    assert request.app_version_of(request.other_results[0]) is None


def test_work_sequences_extension():
    request = parse(
        "<work_sequences><work_sequence><name>seq-a</name></work_sequence>"
        "<work_sequence><name> seq-b </name></work_sequence><work_sequence><name></name></work_sequence></work_sequences>"
    )

    assert request.work_sequences == ("seq-a", "seq-b")
    assert b"<work_sequences>" in render_request(request)
    assert parse("<work_sequences/>").work_sequences == ()


def test_stderr_with_control_bytes_is_accepted():
    body = b"<scheduler_request><result><name>r</name><stderr_out><![CDATA[\x1b[31mred\x00]]></stderr_out></result></scheduler_request>"

    result = parse_request(body, max_bytes=MAX).results[0]

    assert result.stderr_out == "?[31mred?"


def test_stderr_without_cdata_keeps_markup_as_text():
    request = parse("<result><name>r</name><stderr_out>\n<stderr_txt>hi</stderr_txt>\n</stderr_out></result>")

    assert request.results[0].stderr_out == "<stderr_txt>hi</stderr_txt>"
    assert request.results[0].core_client_version == ""


def test_global_prefs_values_are_clamped_not_refused():
    prefs = parse(
        "<working_global_preferences><global_preferences><max_ncpus_pct>250</max_ncpus_pct>"
        "<disk_max_used_pct>-3</disk_max_used_pct></global_preferences></working_global_preferences>"
    ).working_global_prefs

    assert prefs is not None
    assert (prefs.max_ncpus_pct, prefs.disk_max_used_pct) == (100.0, 0.0)


def test_render_writes_client_style_numbers():
    body = render_request(parse("<hostid>7</hostid><work_req_seconds>1e3</work_req_seconds>"))

    assert b"    <hostid>7</hostid>\n" in body
    assert b"    <work_req_seconds>1000.000000</work_req_seconds>\n" in body
