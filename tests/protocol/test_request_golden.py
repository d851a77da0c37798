"""Golden requests shaped like the 7.20.5 client's: parse, fields, and C14N round trips."""

from __future__ import annotations

import pytest

from apps.core.domain.resources import ProcType
from apps.protocol import (
    MAX_REQ_SECS,
    SchedulerRequest,
    parse_request,
    render_request,
    request_from_dict,
    request_to_dict,
)
from tests.protocol.helpers import MAX, REQUEST_FILES, c14n, load


def parse(name: str) -> SchedulerRequest:
    return parse_request(load(name), max_bytes=MAX)


@pytest.mark.parametrize("name", REQUEST_FILES)
def test_render_reproduces_golden_request_in_canonical_form(name):
    body = load(name)

    rendered = render_request(parse_request(body, max_bytes=MAX))

    assert c14n(rendered) == c14n(body)


@pytest.mark.parametrize("name", REQUEST_FILES)
def test_rendered_request_parses_to_the_same_object(name):
    request = parse(name)

    assert parse_request(render_request(request), max_bytes=MAX) == request


@pytest.mark.parametrize("name", REQUEST_FILES)
def test_json_face_round_trips_golden_request(name):
    request = parse(name)

    assert request_from_dict(request_to_dict(request)) == request


def test_first_rpc_of_new_host():
    request = parse("request_first_rpc.xml")

    assert request.authenticator == "0123456789abcdef0123456789abcdef"
    assert request.hostid == 0
    assert request.rpc_seqno == 0
    assert request.client_version == 72005
    assert request.platform_name == "x86_64-pc-linux-gnu"
    assert request.platforms == ("x86_64-pc-linux-gnu",)
    assert request.code_sign_key == ""
    assert request.host_info.host_cpid == "cf38a1b2c3d4e5f60718293a4b5c653b"
    assert request.host_info.p_ncpus == 2
    assert request.host_info.p_fpops == 1e9
    assert request.host_info.os_name == "Linux Debian"
    assert request.time_stats.connected_frac == -1.0
    assert request.app_versions == ()
    assert request.other_results == ()
    assert request.in_progress_results is None
    assert request.work_sequences is None
    assert request.results == ()


def test_first_rpc_asks_for_one_second_of_cpu_work():
    work = parse("request_first_rpc.xml").work_request

    assert work.rsc_spec_request is True
    assert work.get(ProcType.CPU).req_secs == 1.0
    assert work.needs(ProcType.CPU) is True
    assert work.needed_types == (ProcType.CPU,)


def test_working_global_prefs_keep_block_and_relevant_values():
    prefs = parse("request_first_rpc.xml").working_global_prefs

    assert prefs is not None
    assert prefs.work_buf_min_days == 0.01
    assert prefs.disk_max_used_gb == 5.0
    assert prefs.max_ncpus_pct == 100.0
    assert "<run_on_batteries>1</run_on_batteries>" in prefs.raw


def test_report_carries_success_and_error_with_cdata_stderr():
    request = parse("request_report.xml")
    success, error = request.results

    assert (success.name, success.state, success.exit_status) == ("job1_0", 5, 0)
    assert success.core_client_version == "7.20.5"
    assert success.stderr_out.startswith("<stderr_txt>\nworker ran at")
    assert "& exited <ok>" in success.stderr_out
    assert success.stderr_out.endswith("</stderr_txt>")
    assert success.final_peak_working_set_size == 3407872.0
    assert success.files[0].name == "job1_0_r0_out"
    assert success.files[0].nbytes == 12.0
    assert success.files[0].md5_cksum == "d533b16cb509e0614cb307fa6494b7eb"
    assert success.files[0].upload_url == "http://127.0.0.1:8000/file_upload_handler"
    assert (error.name, error.state, error.exit_status, error.files) == ("job2_0", 3, 1, ())
    assert "process exited with code 1" in error.stderr_out


def test_stderr_that_printed_the_cdata_end_marker_still_parses_verbatim():
    # The client writes stderr verbatim inside CDATA; an app that printed "]]>" must not
    # make the report malformed (it would be resent, unacknowledged, on every RPC).
    body = load("request_report.xml").replace(b"worker ran at", b"x ]]> y ]]]]> z; worker ran at", 1)
    success, error = parse_request(body, max_bytes=MAX).results
    assert "x ]]> y ]]]]> z; worker ran at" in success.stderr_out
    assert success.stderr_out.endswith("</stderr_txt>")
    assert "process exited with code 1" in error.stderr_out


def test_stderr_that_printed_a_whole_cdata_section_still_parses_verbatim():
    body = load("request_report.xml").replace(b"worker ran at", b"<x><![CDATA[hi]]></x> worker ran at", 1)
    success, _error = parse_request(body, max_bytes=MAX).results
    assert "<x><![CDATA[hi]]></x> worker ran at" in success.stderr_out


def test_report_carries_code_sign_key_trickle_and_other_results():
    request = parse("request_report.xml")

    assert request.code_sign_key.startswith("1024\ne951")
    assert request.code_sign_key.endswith("010001\n.")
    assert request.trickle_ups[0].result_name == "job3_0"
    assert request.trickle_ups[0].time == 1763750880
    assert request.trickle_ups[0].variety == "progress"
    assert request.trickle_ups[0].body == "<variety>progress</variety>\n<fraction_done>0.5</fraction_done>"
    assert request.other_results[0].name == "job3_0"
    assert request.app_version_of(request.other_results[0]).version_num == 100


def test_report_without_work_request_needs_nothing():
    work = parse("request_report.xml").work_request

    assert work.rsc_spec_request is True
    assert work.wants_work is False


def test_gpu_host_reports_cuda_coproc_with_its_request():
    request = parse("request_gpu.xml")
    cuda = request.coproc(ProcType.NVIDIA)

    assert cuda is not None
    assert (cuda.count, cuda.name) == (1, "NVIDIA GeForce RTX 3070")
    assert (cuda.req_secs, cuda.req_instances, cuda.estimated_delay) == (8640.0, 1.0, 0.0)
    assert cuda.peak_flops == 20314e9
    assert cuda.property("cudaVersion") == "12020"
    assert cuda.property("have_cuda") == "1"
    assert ("opencl_device_version", "OpenCL 3.0 CUDA") in cuda.opencl
    assert request.alt_platforms == ("i686-pc-linux-gnu",)


def test_gpu_work_request_is_per_resource():
    work = parse("request_gpu.xml").work_request

    assert work.rsc_spec_request is True
    assert work.get(ProcType.CPU).req_secs == 4320.0
    assert work.get(ProcType.CPU).estimated_delay == 1200.5
    assert work.get(ProcType.NVIDIA).req_instances == 1.0
    assert work.needed_types == (ProcType.CPU, ProcType.NVIDIA)
    assert work.needs(ProcType.ATI) is False


def test_gpu_app_version_coproc_named_cuda_is_nvidia():
    versions = parse("request_gpu.xml").app_versions

    assert versions[1].plan_class == "cuda"
    assert versions[1].coprocs[0].type is ProcType.NVIDIA
    assert versions[1].coprocs[0].count == 1.0


def test_gpu_in_progress_results():
    in_progress = parse("request_gpu.xml").in_progress_results

    assert in_progress is not None
    assert [r.name for r in in_progress] == ["gpujob7_0", "job9_1"]
    assert in_progress[0].ncudas == 1.0
    assert in_progress[0].time_remaining == 1200.5
    assert in_progress[1].ncudas == 0.0


def test_anonymous_platform_lists_app_versions_to_choose_from():
    request = parse("request_anonymous.xml")

    assert request.is_anonymous_platform is True
    assert [(v.app_name, v.version_num, v.plan_class) for v in request.app_versions] == [
        ("worker", 100, ""),
        ("worker", 200, "mt"),
    ]
    assert request.app_versions[1].avg_ncpus == 4.0
    assert request.app_versions[1].cmdline == "--nthreads 4"
    assert request.work_request.get(ProcType.CPU).req_instances == 2.0


def test_locality_request_lists_sticky_files():
    request = parse("request_locality.xml")

    assert [(f.name, f.nbytes, f.status) for f in request.sticky_files] == [
        ("h1_0050.00_S6Direct", 4194304.0, 1),
        ("l1_0050.00_S6Direct", 4194304.0, 1),
        ("skygrid_0050Hz.dat", 1048576.0, 0),
    ]
    assert request.results == ()


def test_request_seconds_clamped_to_28_days():
    body = load("request_first_rpc.xml").replace(
        b"<cpu_req_secs>1.000000</cpu_req_secs>", b"<cpu_req_secs>1e308</cpu_req_secs>"
    )
    body = body.replace(b"<work_req_seconds>1.000000", b"<work_req_seconds>-5")

    request = parse_request(body, max_bytes=MAX)

    assert request.cpu_req_secs == MAX_REQ_SECS == 2419200.0
    assert request.work_req_seconds == 0.0
