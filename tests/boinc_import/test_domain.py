"""The pure mapping of BOINC rows to Cobblestone values (no database)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.applications.domain.plan_classes import BUILTIN_PLAN_CLASSES
from apps.boinc_import.domain import (
    AccountRules,
    IdMap,
    RowRefused,
    VersionRef,
    db_revision_problem,
    file_name_check,
    hav_target,
    hier_dir,
    map_app,
    map_app_credit,
    map_app_version,
    map_assignment,
    map_host,
    map_host_app_version,
    map_result,
    map_team,
    map_user,
    map_workunit,
    output_files,
    plan_ids,
    schema_problems,
    stats_consent,
    stored_passwd_hash,
)
from apps.boinc_import.domain.schema import REQUIRED_COLUMNS
from apps.protocol import parse_stored_doc

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC).timestamp()
RULES = AccountRules(
    name_problem=lambda name: "user name may not contain HTML tags" if "<" in name else None,
    email_problem=lambda email: None if "@" in email else "not a valid email address",
    url_problem=lambda url: None if "." in url else "Enter a valid URL.",
)


def user_row(**values: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": 5,
        "create_time": 1_700_000_000,
        "email_addr": "ada@example.org",
        "name": "Ada",
        "authenticator": "a" * 32,
        "country": "Iceland",
        "total_credit": 10.0,
        "expavg_credit": 2.0,
        "expavg_time": 1_700_000_500.0,
        "global_prefs": b"",
        "project_prefs": b"",
        "teamid": 0,
        "url": "",
        "show_hosts": 1,
        "cross_project_id": "c" * 32,
        "passwd_hash": hashlib.md5(b"pwada@example.org").hexdigest(),
    }
    return {**row, **values}


def mapped_user(**values: object):
    return map_user(
        user_row(**values), now=NOW, rules=RULES, teams=IdMap(offset=100, imported={3}), stats_consent=True
    )


# --- passwords ---------------------------------------------------------------------------------


def test_a_bare_md5_is_kept_for_log_in_to_upgrade():
    digest = hashlib.md5(b"x").hexdigest().upper()
    assert stored_passwd_hash(digest) == (digest.lower(), None)


def test_phps_bcrypt_becomes_djangos_form_of_the_same_hash():
    php = "$2y$10$" + "a" * 53
    assert stored_passwd_hash(php) == ("bcrypt$" + php, None)


@pytest.mark.parametrize("value", ["", "sha1$abc", "$2y$10$short"])
def test_an_unknown_or_missing_hash_is_dropped_with_a_note(value):
    stored, note = stored_passwd_hash(value)
    assert stored == ""
    assert "account key" in (note or "")


# --- users and teams ---------------------------------------------------------------------------


def test_a_user_maps_to_an_account_in_its_shifted_team():
    values = mapped_user(teamid=3).values
    assert (values["name"], values["team_id"], values["authenticator"]) == ("Ada", 103, "a" * 32)
    assert values["create_time"] == datetime.fromtimestamp(1_700_000_000, tz=UTC)
    assert (values["total_credit"], values["expavg_credit"], values["expavg_time"]) == (
        10.0,
        2.0,
        1_700_000_500.0,
    )


def test_a_team_not_imported_leaves_the_volunteer_teamless_with_a_note():
    mapped = mapped_user(teamid=4)
    assert mapped.values["team_id"] is None
    assert mapped.notes == ["team 4 was not imported: the volunteer is in no team"]


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"name": "<b>Ada</b>"}, "name '<b>Ada</b>': user name may not contain HTML tags"),
        ({"email_addr": "nobody"}, "email_addr 'nobody': not a valid email address"),
        ({"authenticator": ""}, "authenticator is empty"),
        ({"cross_project_id": "c" * 40}, "cross_project_id has 40 characters, more than 32"),
        ({"total_credit": -1.0}, "total_credit = -1.0 is outside [0, inf]"),
        ({"create_time": 0}, "create_time is not set"),
        ({"expavg_time": NOW + 10 * 86400}, "expavg_time 2026-12-01 12:00:00 UTC is in the future"),
        ({"name": b"\xff\xfe"}, "name is not valid UTF-8"),
    ],
)
def test_a_user_breaking_a_rule_is_refused_with_the_reason(values, reason):
    with pytest.raises(RowRefused) as refused:
        mapped_user(**values)
    assert str(refused.value) == reason


def test_a_url_without_a_scheme_gets_one_and_a_bad_one_is_dropped():
    assert mapped_user(url="example.org/me").values["url"] == "http://example.org/me"
    dropped = mapped_user(url="nowhere")
    assert dropped.values["url"] == ""
    assert "not a valid web address" in dropped.notes[0]


def test_project_preferences_give_the_resource_and_beta_switches():
    prefs = (
        b"<project_preferences><no_cpu>1</no_cpu><allow_beta_work>1</allow_beta_work></project_preferences>"
    )
    values = mapped_user(project_prefs=prefs).values
    assert (values["no_cpu"], values["no_gpus"], values["allow_beta_work"]) == (True, False, True)


def test_refusing_every_gpu_type_is_no_gpus():
    prefs = b"<project_preferences><no_cuda/><no_ati/><no_intel_gpu/></project_preferences>"
    assert mapped_user(project_prefs=prefs).values["no_gpus"] is True


def test_preferences_that_are_not_xml_are_dropped_with_a_note():
    mapped = mapped_user(global_prefs=b"<global_preferences><run_on_batteries>")
    assert mapped.values["global_prefs"] == ""
    assert mapped.notes[0].startswith("global_prefs are not valid XML")


def test_stats_export_consent_counts_only_when_boinc_asks_for_it():
    assert stats_consent(consent_enforced=False, latest_flag=None) is True
    assert stats_consent(consent_enforced=True, latest_flag=None) is False
    assert stats_consent(consent_enforced=True, latest_flag=1) is True


def test_a_team_of_a_type_cobblestone_lacks_is_a_club_with_a_note():
    row = {
        "id": 1, "create_time": 1_700_000_000, "userid": 5, "name": "Regional", "url": "", "type": 10,
        "description": "", "country": "", "total_credit": 0.0, "expavg_credit": 0.0, "expavg_time": 0.0,
    }  # fmt: skip
    mapped = map_team(row, now=NOW, rules=RULES)
    assert mapped.values["type"] == 1
    assert mapped.notes == ["team type 10 is not one of Cobblestone's (1-7); stored as 1"]


# --- hosts --------------------------------------------------------------------------------------


def host_row(**values: object) -> dict[str, object]:
    numbers = (
        "total_credit", "expavg_credit", "expavg_time", "p_fpops", "p_iops", "p_membw", "m_nbytes", "m_cache",
        "m_swap", "d_total", "d_free", "n_bwup", "n_bwdown", "credit_per_cpu_sec", "avg_turnaround", "error_rate",
    )  # fmt: skip
    row: dict[str, object] = {name: 0.0 for name in numbers}
    row |= {
        "id": 7, "create_time": 1_700_000_000, "userid": 5, "rpc_seqno": 3, "rpc_time": 1_700_000_100,
        "timezone": 3600, "domain_name": "pc", "last_ip_addr": "10.0.0.1", "on_frac": 0.9, "connected_frac": -1.0,
        "active_frac": 0.8, "gpu_active_frac": 0.7, "p_ncpus": 8, "p_vendor": "v", "p_model": "m" * 300,
        "os_name": "Linux", "os_version": "6", "venue": "", "host_cpid": "c" * 32, "max_results_day": -1,
    }  # fmt: skip
    return {**row, **values}


def test_a_host_belongs_to_its_shifted_user_and_keeps_its_hardware():
    mapped = map_host(host_row(), now=NOW, users=IdMap(offset=10, imported={5}))
    values = mapped.values
    assert (values["account_id"], values["rpc_seqno"], values["p_ncpus"], values["host_cpid"]) == (
        15,
        3,
        8,
        "c" * 32,
    )
    assert (values["connected_frac"], values["blacklisted"]) == (1.0, True)  # -1: unknown; -1 quota: blocked
    assert len(values["p_model"]) == 255
    assert mapped.notes == ["p_model shortened from 300 to 255 characters"]


def test_a_host_of_a_user_not_imported_is_refused():
    with pytest.raises(RowRefused, match="its user 5 was not imported"):
        map_host(host_row(), now=NOW, users=IdMap())


VERSION = VersionRef(
    id=40, app_id=4, platform="x86_64-pc-linux-gnu", version_num=100, plan_class="", proc_type="CPU",
    avg_ncpus=1.0, gpu_usage=0.0,
)  # fmt: skip


def test_an_anonymous_platform_host_app_version_id_decodes_to_its_app_and_resource():
    # sched_util.h: generalized_app_version_id = appid * 1000000 - code (NVIDIA: -3).
    target = hav_target(3 * 1_000_000 + 3, versions={1: VERSION}, apps={3: 30})
    assert (target.app_id, target.app_version_id, target.anonymous_proc_type) == (30, None, "NVIDIA")


def test_a_host_app_version_of_a_real_version():
    target = hav_target(1, versions={1: VERSION}, apps={3: 30})
    assert (target.app_id, target.app_version_id, target.anonymous_proc_type) == (4, 40, "")


def test_a_host_with_validated_jobs_is_off_scale_probation():
    row = {
        "host_id": 7, "app_version_id": 1, "pfc_n": 3.0, "pfc_avg": 1.0, "et_n": 3.0, "et_avg": 1e-9,
        "et_var": 0.0, "et_q": 0.0, "max_jobs_per_day": 20, "n_jobs_today": 1, "turnaround_n": 3.0,
        "turnaround_avg": 100.0, "turnaround_var": 0.0, "turnaround_q": 0.0, "consecutive_valid": 3,
    }  # fmt: skip
    mapped = map_host_app_version(
        row, hosts=IdMap(imported={7}), versions={1: VERSION}, apps={}, error_rate=0.05
    )
    assert (mapped.values["scale_probation"], mapped.values["error_rate"]) == (False, 0.05)
    fresh = map_host_app_version(
        {**row, "pfc_n": 0.0}, hosts=IdMap(imported={7}), versions={1: VERSION}, apps={}, error_rate=0
    )
    assert fresh.values["scale_probation"] is True


# --- apps, versions, credit -----------------------------------------------------------------------


def test_an_app_name_with_a_slash_is_refused():
    row = {"id": 1, "create_time": 1, "name": "a/b", "user_friendly_name": "", "deprecated": 0, "weight": 1.0,
           "beta": 0, "min_avg_pfc": 1.0, "host_scale_check": 0, "non_cpu_intensive": 0,
           "homogeneous_redundancy": 0, "homogeneous_app_version": 0}  # fmt: skip
    with pytest.raises(RowRefused, match="has a '/'"):
        map_app(row, now=NOW)


def app_row(**values: object) -> dict[str, object]:
    row = {"id": 1, "create_time": 1, "name": "a", "user_friendly_name": "", "deprecated": 0, "weight": 1.0,
           "beta": 0, "min_avg_pfc": 1.0, "host_scale_check": 0, "non_cpu_intensive": 0,
           "homogeneous_redundancy": 0, "homogeneous_app_version": 0}  # fmt: skip
    return {**row, **values}


def test_an_app_keeps_its_homogeneous_redundancy_and_app_version():
    values = map_app(app_row(homogeneous_redundancy=2, homogeneous_app_version=1), now=NOW).values
    assert (values["homogeneous_redundancy"], values["homogeneous_app_version"]) == (2, True)


def test_an_unknown_homogeneous_redundancy_type_is_imported_as_off_and_noted():
    mapped = map_app(app_row(homogeneous_redundancy=7), now=NOW)
    assert mapped.values["homogeneous_redundancy"] == 0
    assert mapped.notes == ["homogeneous_redundancy 7 is no known type; imported as off"]


VERSION_DOC = (
    "<file_info><name>w</name><nbytes>3</nbytes><md5_cksum>" + "0" * 32 + "</md5_cksum>"
    "<file_signature>\nab\n.\n</file_signature></file_info>"
    "<app_version><app_name>w</app_name><version_num>100</version_num><file_ref><file_name>w</file_name>"
    "<main_program/></file_ref></app_version>"
)


def version_row(**values: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": 1, "create_time": 1_700_000_000, "appid": 1, "version_num": 100, "platformid": 1,
        "min_core_version": 0, "max_core_version": 0, "deprecated": 0, "plan_class": "", "pfc_n": 1.0,
        "pfc_avg": 2.0, "pfc_scale": 1.0, "expavg_credit": 5.0, "expavg_time": 1_700_000_000.0, "beta": 0,
    }  # fmt: skip
    return {**row, **values}


def test_an_app_version_lists_its_files_with_signatures():
    mapped = map_app_version(
        version_row(),
        now=NOW,
        app_id=9,
        platform_id=2,
        doc=parse_stored_doc(VERSION_DOC),
        plan=BUILTIN_PLAN_CLASSES[""],
    )
    (file,) = mapped.files
    assert (file.file_name, file.main_program, file.nbytes, file.file_signature) == ("w", True, 3, "ab\n.\n")
    assert (mapped.values["app_id"], mapped.values["platform_id"], mapped.values["proc_type"]) == (
        9,
        2,
        "CPU",
    )


def test_an_app_version_without_a_main_program_is_refused():
    doc = parse_stored_doc(VERSION_DOC.replace("<main_program/>", ""))
    with pytest.raises(RowRefused, match="names 0 main programs"):
        map_app_version(
            version_row(), now=NOW, app_id=9, platform_id=2, doc=doc, plan=BUILTIN_PLAN_CLASSES[""]
        )


def test_an_app_version_file_without_a_signature_is_refused():
    doc = parse_stored_doc(VERSION_DOC.replace("<file_signature>\nab\n.\n</file_signature>", ""))
    with pytest.raises(RowRefused, match="has no file_signature"):
        map_app_version(
            version_row(), now=NOW, app_id=9, platform_id=2, doc=doc, plan=BUILTIN_PLAN_CLASSES[""]
        )


def test_per_app_credit_of_a_team():
    row = {"teamid": 2, "appid": 1, "njobs": 4, "total": 10.0, "expavg": 1.5, "expavg_time": 1_700_000_000.0}
    values = map_app_credit(
        row, owner="teamid", owners=IdMap(offset=5, imported={2}), apps={1: 11}, now=NOW
    ).values
    assert values == {
        "team_id": 7,
        "app_id": 11,
        "njobs": 4,
        "total": 10.0,
        "expavg": 1.5,
        "expavg_time": 1_700_000_000.0,
    }


# --- work ---------------------------------------------------------------------------------------


def wu_row(**values: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": 11, "create_time": 1_700_000_000, "appid": 1, "name": "wu", "batch": 0, "rsc_fpops_est": 1e12,
        "rsc_fpops_bound": 1e13, "rsc_memory_bound": 1e8, "rsc_disk_bound": 1e9, "rsc_bandwidth_bound": 0.0,
        "need_validate": 0, "canonical_credit": 0.0, "transition_time": 2**31 - 1, "delay_bound": 86400,
        "error_mask": 0, "file_delete_state": 0, "assimilate_state": 0, "min_quorum": 2, "target_nresults": 2,
        "max_error_results": 3, "max_total_results": 5, "max_success_results": 3, "priority": 0,
        "app_version_id": 0, "hr_class": 0, "transitioner_flags": 0, "keywords": "",
    }  # fmt: skip
    return {**row, **values}


WU_DOC = parse_stored_doc(
    "<file_info><name>in</name><md5_cksum>" + "1" * 32 + "</md5_cksum><nbytes>9</nbytes><sticky/></file_info>"
    "<workunit><file_ref><file_name>in</file_name><open_name>data</open_name></file_ref>"
    "<command_line>-n 5</command_line></workunit>"
)


def test_a_workunit_keeps_its_bounds_and_command_line_and_never_transition_time_is_none():
    mapped = map_workunit(wu_row(), now=NOW, apps={1: 8}, versions={}, doc=WU_DOC)
    values = mapped.values
    assert (values["app_id"], values["command_line"], values["min_quorum"], values["transition_time"]) == (
        8,
        "-n 5",
        2,
        None,
    )
    (file,) = mapped.files
    assert (file.name, file.open_name, file.sticky, file.nbytes) == ("in", "data", True, 9)


def test_a_workunit_keeps_its_homogeneous_redundancy_class():
    mapped = map_workunit(wu_row(hr_class=267), now=NOW, apps={1: 8}, versions={}, doc=WU_DOC)
    assert mapped.values["hr_class"] == 267


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"rsc_fpops_bound": 1e11}, "rsc_fpops_bound must be at least rsc_fpops_est"),
        ({"min_quorum": 0}, "min_quorum must be at least 1"),
        ({"delay_bound": 0}, "delay_bound must be at least one second"),
        ({"appid": 2}, "its app 2 was not imported"),
        ({"assimilate_state": 7}, "assimilate_state = 7 is not one of BOINC's values"),
    ],
)
def test_a_workunit_breaking_a_rule_is_refused(values, reason):
    with pytest.raises(RowRefused, match=reason):
        map_workunit(wu_row(**values), now=NOW, apps={1: 8}, versions={}, doc=WU_DOC)


RESULT_DOC = parse_stored_doc(
    "<file_info><name>r_0</name><generated_locally/><upload_when_present/><max_nbytes>500</max_nbytes>"
    "<url>http://x.org/cgi/file_upload_handler</url></file_info>"
    "<result><file_ref><file_name>r_0</file_name><open_name>out</open_name><optional/></file_ref></result>"
)


def result_row(**values: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": 21, "create_time": 1_700_000_000, "workunitid": 11, "server_state": 4, "outcome": 0,
        "client_state": 0, "hostid": 7, "userid": 5, "report_deadline": 1_800_000_000, "sent_time": 1_700_000_100,
        "received_time": 0, "name": "r", "cpu_time": 0.0, "stderr_out": b"", "file_delete_state": 0,
        "validate_state": 0, "claimed_credit": 0.0, "granted_credit": 0.0, "appid": 1, "exit_status": 0,
        "priority": 0, "elapsed_time": 0.0, "flops_estimate": 3e9, "app_version_id": 1, "runtime_outlier": 0,
        "peak_working_set_size": 0.0,
    }  # fmt: skip
    return {**row, **values}


def mapped_result(**values: object):
    return map_result(
        result_row(**values),
        now=NOW,
        workunits=IdMap(offset=1, imported={11}),
        hosts=IdMap(offset=2, imported={7}),
        users=IdMap(offset=3, imported={5}),
        apps={1: 8},
        versions={1: VERSION},
        outputs=output_files(RESULT_DOC),
    )


def test_a_result_in_progress_maps_onto_its_workunit_host_user_and_version():
    mapped = mapped_result()
    values = mapped.values
    assert (values["workunit_id"], values["host_id"], values["account_id"], values["app_version_id"]) == (
        12,
        9,
        8,
        40,
    )
    assert (values["platform"], values["version_num"], values["proc_type"]) == (
        "x86_64-pc-linux-gnu",
        100,
        "CPU",
    )
    assert values["received_time"] is None
    (output,) = mapped.files
    assert (output.name, output.open_name, output.max_nbytes, output.optional) == ("r_0", "out", 500, True)


def test_a_result_on_a_host_not_imported_is_kept_with_a_note():
    mapped = mapped_result(hostid=8)
    assert mapped.values["host_id"] is None
    assert mapped.notes == ["its host 8 was not imported: its report will be refused and the task sent again"]


def test_an_anonymous_platform_result_keeps_its_resource():
    values = mapped_result(app_version_id=-3).values
    assert (values["app_version_id"], values["anonymous_proc_type"], values["platform"]) == (
        None,
        "NVIDIA",
        "anonymous",
    )


def test_stderr_that_is_not_utf8_is_kept_with_replacement_characters():
    assert mapped_result(stderr_out=b"ok \xff").values["stderr_out"] == "ok \ufffd"


def test_an_output_file_without_max_nbytes_is_refused():
    doc = parse_stored_doc("<file_info><name>r_0</name></file_info>")
    with pytest.raises(RowRefused, match="has no max_nbytes"):
        output_files(doc)


@pytest.mark.parametrize("name", ["../etc/passwd", "a/b", ".hidden", "x" * 255])
def test_unsafe_file_names_are_refused(name):
    with pytest.raises(RowRefused):
        file_name_check(name)


# --- ids, paths, schema -----------------------------------------------------------------------------


def test_free_ids_are_kept():
    plan = plan_ids(source_min=1, source_max=500, range_taken=False, next_free=800)
    assert (plan.offset, plan.reserved_max_id, plan.last_target_id) == (0, 500, 500)


def test_taken_ids_are_shifted_above_everything_taken():
    plan = plan_ids(source_min=3, source_max=500, range_taken=True, next_free=800)
    assert (plan.offset, plan.last_target_id) == (797, 1297)


@given(
    st.integers(1, 10**6), st.integers(0, 10**6), st.booleans(), st.integers(1, 10**7), st.integers(0, 10**6)
)
def test_every_source_id_maps_into_the_reserved_range_and_clear_of_taken_ids(
    lo, span, taken, next_free, pick
):
    plan = plan_ids(source_min=lo, source_max=lo + span, range_taken=taken, next_free=next_free)
    source = lo + pick % (span + 1)
    target = source + plan.offset
    assert target <= plan.last_target_id
    assert target >= (next_free if taken else lo)


def test_hier_dir_is_boincs_filename_hash():
    # sched_util_basic.cpp: hex digits 1-7 of md5(name), as a number, modulo the fanout.
    digest = hashlib.md5(b"input_a").hexdigest()
    assert hier_dir("input_a", 1024) == f"{int(digest[1:8], 16) % 1024:x}"
    assert hier_dir("input_a", 0) == ""


def test_a_schema_with_every_column_has_no_problem():
    assert (
        schema_problems({table: set(columns) | {"extra"} for table, columns in REQUIRED_COLUMNS.items()})
        == []
    )


def test_missing_tables_and_columns_are_named():
    present = {table: set(columns) for table, columns in REQUIRED_COLUMNS.items() if table != "consent"}
    present["host"] -= {"gpu_active_frac", "error_rate"}
    assert schema_problems(present) == [
        "table host lacks column(s) error_rate, gpu_active_frac",
        "table consent is missing",
    ]


@pytest.mark.parametrize(
    ("revision", "problem"), [(None, False), (27028, False), (27032, False), (27027, True), (27033, True)]
)
def test_known_db_revisions(revision, problem):
    assert (db_revision_problem(revision) is not None) is problem


def test_a_targeted_assignment_for_no_one_is_refused():
    workunits = IdMap(imported={11})
    row = {"workunitid": 11, "target_type": 0, "target_id": 0, "multi": 0, "create_time": 0}
    with pytest.raises(RowRefused, match="never sent"):
        map_assignment(row, now=0.0, workunits=workunits, hosts=IdMap(), users=IdMap(), teams=IdMap())
