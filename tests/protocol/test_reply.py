"""Scheduler reply: fixed-order rendering, the doc's job shape, pitfalls, parse side."""

from __future__ import annotations

import pytest
from lxml import etree

from apps.core.domain.resources import ProcType
from apps.protocol import (
    AppVersionDesc,
    CoprocUsage,
    FileInfoDesc,
    FileRef,
    MessagePriority,
    ProtocolError,
    ReplyMessage,
    ResultDesc,
    SchedulerReply,
    TrickleDown,
    WorkunitDesc,
    error_reply,
    parse_reply,
    render_reply,
    reply_from_dict,
    reply_to_dict,
)
from tests.protocol.helpers import c14n, load


def tags(body: bytes) -> list[str]:
    return [child.tag for child in etree.fromstring(body)]


def test_golden_reply_round_trips_exactly_in_canonical_form():
    body = load("reply_job.xml")

    assert c14n(render_reply(parse_reply(body))) == c14n(body)


def test_doc_minimal_job_reply_survives_render_with_the_same_elements():
    # The doc interleaves file_infos with the work; the renderer groups them (the client
    # parses the whole reply before applying it, so order is free).
    body = load("reply_doc_minimal.xml")
    reply = parse_reply(body)

    rendered = render_reply(reply)

    assert parse_reply(rendered) == reply
    assert sorted(tags(rendered)) == sorted(tags(body))


def test_doc_minimal_reply_parses_to_a_job():
    reply = parse_reply(load("reply_doc_minimal.xml"))

    assert reply.scheduler_version == 720
    assert reply.dont_use_dcf is True
    assert reply.hostid == 7
    assert reply.project_preferences == ""
    assert reply.host_venue == ""
    assert reply.app_versions[0].flops == 1e9
    assert reply.app_versions[0].file_refs[0].main_program is True
    assert reply.workunits[0].rsc_fpops_bound == 1e12
    assert reply.results[0].report_deadline == 1795891651
    assert reply.file_infos[0].file_signature.endswith("\n.")
    upload = reply.file_infos[2]
    assert upload.is_upload is True
    assert upload.upload_urls == ("http://127.0.0.1:8000/file_upload_handler",)
    assert upload.generated_locally is True
    assert reply.code_sign_key.startswith("1024\n")


def test_fields_are_written_in_fixed_order():
    reply = SchedulerReply(
        code_sign_key="1024\nab\n.",
        result_acks=("r1",),
        hostid=3,
        messages=(ReplyMessage("hi"),),
        scheduler_version=720,
        project_name="P",
        request_delay=5,
    )

    assert tags(render_reply(reply)) == [
        "scheduler_version",
        "project_name",
        "message",
        "request_delay",
        "hostid",
        "result_ack",
        "code_sign_key",
    ]


def test_none_and_false_are_omitted_and_true_is_a_flag():
    body = render_reply(SchedulerReply(dont_use_dcf=True, project_is_down=False))

    assert body == b"<scheduler_reply>\n<dont_use_dcf/>\n</scheduler_reply>\n"


def test_numbers_are_written_so_the_client_reads_them():
    body = render_reply(SchedulerReply(request_delay=5.0, user_total_credit=12.5, host_expavg_credit=1e20))

    assert b"<request_delay>5</request_delay>" in body
    assert b"<user_total_credit>12.5</user_total_credit>" in body
    assert b"<host_expavg_credit>1e+20</host_expavg_credit>" in body


def test_non_finite_numbers_cannot_be_rendered():
    with pytest.raises(ProtocolError):
        render_reply(SchedulerReply(request_delay=float("nan")))


def test_message_priority_is_an_attribute():
    body = render_reply(SchedulerReply(messages=(ReplyMessage("a < b", MessagePriority.NOTICE),)))

    assert b'<message priority="notice">a &lt; b</message>' in body


def test_error_reply_has_notice_and_delay():
    reply = parse_reply(error_reply("Invalid or missing account key.  To fix, remove and add this project."))

    assert reply.messages[0].priority is MessagePriority.NOTICE
    assert reply.messages[0].text.startswith("Invalid or missing account key.")
    assert reply.request_delay == 3600


def test_upload_url_without_marker_goes_in_upload_url_tag():
    info = FileInfoDesc("out", upload_urls=("http://h/upload",), max_nbytes=10)

    body = render_reply(SchedulerReply(file_infos=(info,)))

    assert b"<upload_url>http://h/upload</upload_url>" in body
    assert parse_reply(body).file_infos[0] == info


def test_download_url_with_marker_goes_in_download_url_tag():
    info = FileInfoDesc("in", download_urls=("http://h/file_upload_handler_data/in",))

    body = render_reply(SchedulerReply(file_infos=(info,)))

    assert b"<download_url>" in body
    assert parse_reply(body).file_infos[0].download_urls == info.download_urls


def test_upload_without_max_nbytes_is_refused():
    with pytest.raises(ProtocolError, match="max_nbytes"):
        render_reply(
            SchedulerReply(file_infos=(FileInfoDesc("out", upload_urls=("http://h/file_upload_handler",)),))
        )


@pytest.mark.parametrize("name", ["../x", "a/b", "%2e%2e", "", "a\\b"])
def test_unsafe_file_names_are_refused(name):
    with pytest.raises(ProtocolError):
        render_reply(SchedulerReply(file_infos=(FileInfoDesc(name),)))
    with pytest.raises(ProtocolError):
        render_reply(SchedulerReply(workunits=(WorkunitDesc("w", "a", file_refs=(FileRef(name),)),)))


def test_gpu_app_version_and_cpu_coproc():
    version = AppVersionDesc("a", 1, coprocs=(CoprocUsage(ProcType.NVIDIA, 0.5),))

    body = render_reply(SchedulerReply(app_versions=(version,)))

    assert b"<type>NVIDIA</type>" in body
    assert parse_reply(body).app_versions[0] == version
    with pytest.raises(ProtocolError):
        render_reply(
            SchedulerReply(app_versions=(AppVersionDesc("a", 1, coprocs=(CoprocUsage(ProcType.CPU, 1),)),))
        )


def test_raw_blocks_are_embedded_as_elements():
    reply = SchedulerReply(
        project_preferences="\n<resource_share>100</resource_share>\n", gui_urls="<gui_url/>"
    )

    body = render_reply(reply)

    assert b"<project_preferences>\n<resource_share>100</resource_share>\n</project_preferences>" in body
    assert parse_reply(body).project_preferences == reply.project_preferences
    with pytest.raises(ProtocolError):
        render_reply(SchedulerReply(project_preferences="<unclosed>"))


def test_empty_project_preferences_is_never_self_closing():
    assert b"<project_preferences></project_preferences>" in render_reply(
        SchedulerReply(project_preferences="")
    )


def test_work_sequence_extension_and_lists():
    reply = SchedulerReply(
        result_aborts=("r2",),
        result_aborts_if_not_started=("r3",),
        delete_file_infos=("f1",),
        no_rsc_apps=(ProcType.ATI,),
        work_sequences_assigned=("s1",),
        work_sequences_unassigned=("s2",),
        work_sequences_ended=("s3",),
        trickle_downs=(TrickleDown("r1", 5, "<variety>x</variety>"),),
        message_ack=True,
    )

    body = render_reply(reply)

    assert b"<work_sequence_unassigned>\n    <name>s2</name>\n</work_sequence_unassigned>" in body
    assert b"<delete_file_info>f1</delete_file_info>" in body
    assert b"<no_rsc_apps>ATI</no_rsc_apps>" in body
    assert parse_reply(body) == reply


def test_legacy_no_apps_flags_are_read():
    reply = parse_reply(
        b"<scheduler_reply><no_cuda_apps/><no_rsc_apps>intel_gpu</no_rsc_apps></scheduler_reply>"
    )

    assert reply.no_rsc_apps == (ProcType.NVIDIA, ProcType.INTEL_GPU)


def test_reply_json_round_trip():
    reply = parse_reply(load("reply_job.xml"))

    assert reply_from_dict(reply_to_dict(reply)) == reply
    assert reply_to_dict(reply)["results"][0]["report_deadline"] == 1795891651


def test_result_deadline_is_always_written():
    body = render_reply(SchedulerReply(results=(ResultDesc("r", "w"),)))

    assert b"<report_deadline>0</report_deadline>" in body
