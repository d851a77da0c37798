"""create_work templates: parse, render, macro substitution on the structure."""

from __future__ import annotations

import pytest

from apps.protocol import (
    FileInfoDesc,
    FileRef,
    Macro,
    ProtocolError,
    StagedFile,
    TemplateString,
    instantiate_input,
    instantiate_output,
    outfile_base,
    parse_input_template,
    parse_output_template,
    render_input_template,
    render_output_template,
)

INPUT = b"""<input_template>
    <file_info>
        <number>0</number>
        <sticky/>
        <no_delete/>
    </file_info>
    <file_info>
        <number>1</number>
        <gzip/>
    </file_info>
    <workunit>
        <file_ref>
            <file_number>0</file_number>
            <open_name>in</open_name>
            <copy_file/>
        </file_ref>
        <file_ref>
            <file_number>1</file_number>
            <open_name>params.txt</open_name>
        </file_ref>
        <command_line>-n 5 --verbose</command_line>
        <rsc_fpops_est>1e12</rsc_fpops_est>
        <rsc_fpops_bound>1e14</rsc_fpops_bound>
        <rsc_memory_bound>5e8</rsc_memory_bound>
        <rsc_disk_bound>1e9</rsc_disk_bound>
        <delay_bound>604800</delay_bound>
        <min_quorum>2</min_quorum>
        <target_nresults>2</target_nresults>
        <max_error_results>3</max_error_results>
        <max_total_results>5</max_total_results>
        <max_success_results>3</max_success_results>
        <batch>4</batch>
    </workunit>
</input_template>
"""

OUTPUT = b"""<output_template>
    <file_info>
        <name><OUTFILE_0/></name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>5000000</max_nbytes>
        <url><UPLOAD_URL/></url>
    </file_info>
    <file_info>
        <name><OUTFILE_1/>.log</name>
        <generated_locally/>
        <upload_when_present/>
        <max_nbytes>100000</max_nbytes>
        <url><UPLOAD_URL/></url>
        <gzip_when_done/>
    </file_info>
    <result>
        <file_ref>
            <file_name><OUTFILE_0/></file_name>
            <open_name>out</open_name>
            <copy_file/>
        </file_ref>
        <file_ref>
            <file_name><OUTFILE_1/>.log</file_name>
            <open_name>log.txt</open_name>
            <copy_file/>
            <optional/>
        </file_ref>
    </result>
</output_template>
"""


def test_input_template_fields():
    template = parse_input_template(INPUT)

    assert [(f.number, f.sticky, f.no_delete, f.gzip) for f in template.files] == [
        (0, True, True, False),
        (1, False, False, True),
    ]
    wu = template.workunit
    assert [(r.file_number, r.open_name, r.copy_file) for r in wu.file_refs] == [
        (0, "in", True),
        (1, "params.txt", False),
    ]
    assert wu.command_line == "-n 5 --verbose"
    assert (wu.rsc_fpops_est, wu.delay_bound, wu.min_quorum, wu.max_total_results, wu.batch) == (
        1e12,
        604800,
        2,
        5,
        4,
    )


def test_input_template_round_trip():
    template = parse_input_template(INPUT)

    assert parse_input_template(render_input_template(template)) == template
    assert render_input_template(template) == INPUT.replace(b"1e12", b"1000000000000").replace(
        b"1e14", b"100000000000000"
    ).replace(b"5e8", b"500000000").replace(b"1e9", b"1000000000")


def test_input_file_number_defaults_to_position():
    template = parse_input_template("<input_template><file_info/><file_info/></input_template>")

    assert [f.number for f in template.files] == [0, 1]


@pytest.mark.parametrize(
    "body",
    [
        "<input_template><workunit><file_ref><file_number>3</file_number></file_ref></workunit></input_template>",
        "<input_template><file_info><number>0</number></file_info><file_info><number>0</number></file_info></input_template>",
        "<input_template><workunit><min_quorum>3</min_quorum><target_nresults>2</target_nresults></workunit></input_template>",
        "<input_template><workunit><min_quorum>0</min_quorum></workunit></input_template>",
    ],
)
def test_bad_input_templates_are_refused(body):
    with pytest.raises(ProtocolError):
        parse_input_template(body)


def test_instantiate_input_maps_file_numbers_to_staged_files():
    template = parse_input_template(INPUT)
    staged = [
        StagedFile("wu7_in", ("http://h/dl/wu7_in",), "aa", 10),
        StagedFile("wu7_params", ("http://h/dl/wu7_params",), "bb", 20, ("http://h/dl/wu7_params.gz",), 8),
    ]

    infos, refs = instantiate_input(template, staged)

    assert infos[0] == FileInfoDesc(
        "wu7_in",
        download_urls=("http://h/dl/wu7_in",),
        md5_cksum="aa",
        nbytes=10,
        sticky=True,
        no_delete=True,
    )
    assert infos[1].gzipped_urls == ("http://h/dl/wu7_params.gz",)
    assert infos[1].gzipped_nbytes == 8
    assert refs == (FileRef("wu7_in", "in", copy_file=True), FileRef("wu7_params", "params.txt"))
    with pytest.raises(ProtocolError):
        instantiate_input(template, staged[:1])


def test_output_template_keeps_macros_as_structure():
    template = parse_output_template(OUTPUT)

    assert template.files[0].name == TemplateString((Macro("OUTFILE_0"),))
    assert template.files[1].name == TemplateString((Macro("OUTFILE_1"), ".log"))
    assert template.files[0].url == TemplateString((Macro("UPLOAD_URL"),))
    assert template.result.file_refs[1].optional is True


def test_output_template_round_trip():
    template = parse_output_template(OUTPUT)

    assert render_output_template(template) == OUTPUT
    assert parse_output_template(render_output_template(template)) == template


def test_instantiate_output_substitutes_macros():
    template = parse_output_template(OUTPUT)

    resolved = instantiate_output(
        template, outfile_base=outfile_base("job1_0", 4711), upload_url="http://h/file_upload_handler"
    )

    assert [f.name for f in resolved.file_infos] == ["job1_0_r4711_0", "job1_0_r4711_1.log"]
    assert resolved.file_infos[0].upload_urls == ("http://h/file_upload_handler",)
    assert resolved.file_infos[0].max_nbytes == 5e6
    assert resolved.file_infos[1].gzip_when_done is True
    assert resolved.file_refs[0] == FileRef("job1_0_r4711_0", "out", copy_file=True)
    assert resolved.file_refs[1].file_name == "job1_0_r4711_1.log"


def test_macro_substitution_does_not_interpret_text():
    template = parse_output_template(
        b"<output_template><file_info><name>&lt;OUTFILE_0/&gt;</name><max_nbytes>1</max_nbytes>"
        b"</file_info></output_template>"
    )

    assert template.files[0].name == TemplateString(("<OUTFILE_0/>",))


@pytest.mark.parametrize(
    "body",
    [
        b"<output_template><file_info><name><OUTFILE_0/></name></file_info></output_template>",
        b"<output_template><file_info><max_nbytes>5</max_nbytes></file_info></output_template>",
        b"<output_template><file_info><name><EVIL/></name><max_nbytes>5</max_nbytes></file_info></output_template>",
        b"<output_template><file_info><name><OUTFILE_0>x</OUTFILE_0></name><max_nbytes>5</max_nbytes></file_info></output_template>",
    ],
)
def test_bad_output_templates_are_refused(body):
    with pytest.raises(ProtocolError):
        parse_output_template(body)


def test_unsafe_output_name_is_refused_on_instantiation():
    template = parse_output_template(
        b"<output_template><file_info><name>../<OUTFILE_0/></name><max_nbytes>5</max_nbytes></file_info></output_template>"
    )

    with pytest.raises(ProtocolError):
        instantiate_output(template, outfile_base="r_", upload_url="u")
