"""The JSON face validates like XML, and equal content gives equal objects."""

from __future__ import annotations

import json

import pytest

from apps.core.domain.resources import ProcType
from apps.protocol import ProtocolError, parse_request, request_from_dict, request_to_dict
from tests.protocol.helpers import MAX, load


def prefs_block() -> str:
    text = load("request_first_rpc.xml").decode()
    return text.split("<global_preferences>", 1)[1].split("</global_preferences>", 1)[0]


FIRST_RPC_JSON = {
    "authenticator": "0123456789abcdef0123456789abcdef",
    "hostid": 0,
    "rpc_seqno": 0,
    "core_client_major_version": 7,
    "core_client_minor_version": 20,
    "core_client_release": 5,
    "resource_share_fraction": 1,
    "rrs_fraction": 1.0,
    "prrs_fraction": "1.000000",
    "duration_correction_factor": 1.0,
    "allow_multiple_clients": False,
    "sandbox": 0,
    "dont_send_work": "0",
    "work_req_seconds": 1.0,
    "cpu_req_secs": 1.0,
    "cpu_req_instances": 0.0,
    "estimated_delay": 0.0,
    "client_cap_plan_class": True,
    "platform_name": "x86_64-pc-linux-gnu",
    "cross_project_id": "",
    "time_stats": {
        "on_frac": 1.0,
        "connected_frac": -1.0,
        "cpu_and_network_available_frac": 1.0,
        "active_frac": 1.0,
        "gpu_active_frac": 1.0,
        "client_start_time": 1763750847.0,
        "total_start_time": 1763750847.0,
        "total_duration": 7.003412,
        "total_active_duration": 7.003412,
        "total_gpu_active_duration": 7.003412,
        "now": 1763750854.0,
        "previous_uptime": 0.0,
        "session_active_duration": 7.003412,
        "session_gpu_active_duration": 7.003412,
    },
    "net_stats": {"bwup": 0, "avg_up": 0, "avg_time_up": 0, "bwdown": 0, "avg_down": 0, "avg_time_down": 0},
    "host_info": {
        "timezone": 0,
        "domain_name": "buildbox",
        "ip_addr": "172.17.0.2",
        "host_cpid": "cf38a1b2c3d4e5f60718293a4b5c653b",
        "p_ncpus": 2,
        "p_vendor": "GenuineIntel",
        "p_model": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz [Family 6 Model 79 Stepping 1]",
        "p_features": (
            "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
            "sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid pni pclmulqdq "
            "ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor "
            "lahf_lm abm 3dnowprefetch fsgsbase bmi1 hle avx2 smep bmi2 erms invpcid rtm rdseed adx smap "
            "xsaveopt arat"
        ),
        "p_fpops": 1e9,
        "p_iops": 1e9,
        "p_membw": 1e9,
        "p_calculated": 0,
        "p_vm_extensions_disabled": False,
        "m_nbytes": 25325268992,
        "m_cache": 47185920,
        "m_swap": 2147479552,
        "d_total": 105089261568,
        "d_free": 84826443776,
        "os_name": "Linux Debian",
        "os_version": "Debian GNU/Linux 12 (bookworm) [6.1.0-27-amd64|libc 2.36]",
        "n_usable_coprocs": 0,
        "wsl_available": False,
    },
    "disk_usage": {"d_boinc_used_total": 0, "d_boinc_used_project": 0, "d_project_share": 0},
    "app_versions": [],
    "other_results": [],
}


def test_xml_and_json_with_the_same_content_are_equal():
    data = {**FIRST_RPC_JSON, "working_global_prefs": {"raw": prefs_block()}}

    from_json = request_from_dict(json.loads(json.dumps(data)))

    assert from_json == parse_request(load("request_first_rpc.xml"), max_bytes=MAX)


def test_json_validation_matches_xml_validation():
    with pytest.raises(ProtocolError):
        request_from_dict({"host_info": {"p_fpops": 1e308}})
    with pytest.raises(ProtocolError):
        parse_request(
            b"<scheduler_request><host_info><p_fpops>1e308</p_fpops></host_info></scheduler_request>",
            max_bytes=MAX,
        )
    assert request_from_dict({"cpu_req_secs": 1e308}).cpu_req_secs == 2419200.0


def test_to_dict_is_plain_json():
    request = parse_request(load("request_gpu.xml"), max_bytes=MAX)

    data = request_to_dict(request)

    assert json.loads(json.dumps(data)) == data
    assert data["coprocs"][0]["type"] == "NVIDIA"
    assert data["app_versions"][1]["coprocs"][0] == {"type": "NVIDIA", "count": 1.0}
    assert data["in_progress_results"][0]["name"] == "gpujob7_0"
    assert data["work_sequences"] is None


def test_json_reported_result_and_trickle():
    request = request_from_dict(
        {
            "results": [
                {"name": "r", "state": 5, "stderr_out": "\nline\n", "files": [{"name": "r_0", "nbytes": 3}]}
            ],
            "trickle_ups": [{"result_name": "r", "time": 5, "body": " <variety>v</variety> "}],
            "coprocs": [
                {"type": "cuda", "count": 1, "req_secs": 10, "properties": [["cudaVersion", " 12020 "]]}
            ],
            "work_sequences": ["a", " ", "b"],
        }
    )

    assert request.results[0].stderr_out == "line"
    assert request.results[0].files[0].nbytes == 3.0
    assert request.trickle_ups[0].variety == "v"
    assert request.trickle_ups[0].body == "<variety>v</variety>"
    assert request.coprocs[0].type is ProcType.NVIDIA
    assert request.coprocs[0].property("cudaVersion") == "12020"
    assert request.work_sequences == ("a", "b")


def test_json_prefs_fields_come_from_the_block():
    prefs = request_from_dict(
        {"global_prefs": {"raw": "<max_ncpus_pct>50</max_ncpus_pct>", "max_ncpus_pct": 10}}
    ).global_prefs

    assert prefs is not None
    assert prefs.max_ncpus_pct == 50.0
