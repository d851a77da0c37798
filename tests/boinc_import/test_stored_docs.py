"""Reading a BOINC project's config.xml and the XML documents its database keeps."""

from __future__ import annotations

import pytest

from apps.protocol import ProtocolError, parse_boinc_config, parse_project_prefs_switches, parse_stored_doc


def test_config_options_are_read_and_unknown_ones_ignored():
    config = parse_boinc_config(
        b"<boinc><config><long_name>P</long_name><master_url>https://x.org/p/</master_url>"
        b"<uldl_dir_fanout>512</uldl_dir_fanout><resend_lost_results/><shmem_key>0x111</shmem_key>"
        b"<max_wus_to_send>4</max_wus_to_send></config><tasks/><daemons/></boinc>"
    )
    assert (config.long_name, config.master_url, config.uldl_dir_fanout) == ("P", "https://x.org/p/", 512)
    assert (config.resend_lost_results, config.max_wus_to_send, config.daily_result_quota) == (True, 4, None)


def test_the_fanout_defaults_to_boincs_1024():
    assert parse_boinc_config(b"<boinc><config/></boinc>").uldl_dir_fanout == 1024


@pytest.mark.parametrize(
    "body",
    [
        b"<boinc><daemons/></boinc>",
        b"<config/>",
        b'<!DOCTYPE boinc [<!ENTITY x "y">]><boinc><config/></boinc>',
    ],
)
def test_a_config_without_its_config_element_or_with_a_doctype_is_refused(body):
    with pytest.raises(ProtocolError):
        parse_boinc_config(body)


def test_a_workunit_document_gives_its_input_files_and_command_line():
    doc = parse_stored_doc(
        b"<file_info>\n<name>in_1</name>\n<url>http://x.org/p/download/1a/in_1</url>\n<md5_cksum>ab</md5_cksum>"
        b"\n<nbytes>12</nbytes>\n</file_info>\n<workunit>\n<file_ref>\n<file_name>in_1</file_name>\n"
        b"<open_name>in</open_name>\n<copy_file/>\n</file_ref>\n<command_line>-x 1</command_line>\n</workunit>\n"
    )
    (info,) = doc.file_infos
    (ref,) = doc.workunits[0].file_refs
    assert (info.name, info.download_urls, info.nbytes) == (
        "in_1",
        ("http://x.org/p/download/1a/in_1",),
        12.0,
    )
    assert (ref.open_name, ref.copy_file, doc.workunits[0].command_line) == ("in", True, "-x 1")


def test_a_result_document_gives_its_output_files_with_their_upload_url():
    doc = parse_stored_doc(
        "<file_info><name>r_0</name><generated_locally/><upload_when_present/><max_nbytes>5000</max_nbytes>"
        "<url>http://x.org/p_cgi/file_upload_handler</url></file_info>"
        "<result><file_ref><file_name>r_0</file_name><open_name>out</open_name></file_ref></result>"
    )
    (info,) = doc.file_infos
    assert (info.upload_urls, info.max_nbytes) == (("http://x.org/p_cgi/file_upload_handler",), 5000.0)
    assert doc.results[0].file_refs[0].open_name == "out"


@pytest.mark.parametrize("body", [None, b"", ""])
def test_an_empty_document_has_nothing(body):
    doc = parse_stored_doc(body)
    assert (doc.file_infos, doc.app_versions, doc.workunits, doc.results) == ((), (), (), ())


def test_a_broken_document_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        parse_stored_doc(b"<file_info><name>x</name>")


def test_project_preferences_switches():
    switches = parse_project_prefs_switches(
        "<project_preferences><no_cuda/><no_ati>1</no_ati></project_preferences>"
    )
    assert (switches.no_cpu, switches.no_gpus, switches.some_gpus_only) == (False, False, True)
    assert parse_project_prefs_switches("").no_cpu is False
