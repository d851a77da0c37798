"""create_work templates (input and output), parsed into dataclasses.

Macros (``<OUTFILE_n/>``, ``<UPLOAD_URL/>``) stay structure: a ``TemplateString`` is a
tuple of text and ``Macro`` parts, and ``instantiate_output`` substitutes them on that
structure, never on text. An output file named ``<OUTFILE_0/>`` becomes
``outfile_base + "0"``; BOINC's create_result uses ``outfile_base(result_name, nonce)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from apps.protocol.errors import ProtocolError
from apps.protocol.filenames import is_safe_file_name
from apps.protocol.reply_types import FileInfoDesc, FileRef
from apps.protocol.schema import (
    IntRange,
    custom_meta,
    from_xml,
    node_meta,
    register_hooks,
    render_fields,
    s_bool,
    s_float,
    s_int,
    s_nodes,
    s_str,
    s_strs,
    scalar_names,
)
from apps.protocol.xmlsafe import child_elements, parse_document
from apps.protocol.xmlwrite import Block, new_document, serialize

MAX_TEMPLATE_BYTES = 1024 * 1024
_MACRO_RE = re.compile(r"OUTFILE_([0-9]{1,4})|UPLOAD_URL")
_IN = "    "
_COUNT: IntRange = {"lo": 1, "hi": 10_000}


@dataclass(frozen=True, slots=True)
class Macro:
    name: str  # "OUTFILE_<n>" or "UPLOAD_URL"


@dataclass(frozen=True, slots=True)
class TemplateString:
    parts: tuple[str | Macro, ...] = ()

    def substitute(self, *, outfile_base: str, upload_url: str) -> str:
        out = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
            elif part.name == "UPLOAD_URL":
                out.append(upload_url)
            else:
                out.append(outfile_base + part.name.removeprefix("OUTFILE_"))
        return "".join(out).strip()


@dataclass(frozen=True, slots=True)
class InputFileTemplate:
    number: int | None = s_int(None, lo=0, hi=10_000)
    sticky: bool = s_bool()
    no_delete: bool = s_bool()
    gzip: bool = s_bool()
    urls: tuple[str, ...] = s_strs(tag="url")
    nbytes: float | None = s_float(None, hi=1e15)
    md5_cksum: str | None = s_str(None)


@dataclass(frozen=True, slots=True)
class InputFileRefTemplate:
    file_number: int = s_int(0, lo=0, hi=10_000)
    open_name: str = s_str()
    copy_file: bool = s_bool()
    optional: bool = s_bool()


@dataclass(frozen=True, slots=True)
class WorkunitTemplate:
    file_refs: tuple[InputFileRefTemplate, ...] = s_nodes(InputFileRefTemplate, tag="file_ref")
    command_line: str | None = s_str(None)
    rsc_fpops_est: float | None = s_float(None, hi=1e30)
    rsc_fpops_bound: float | None = s_float(None, hi=1e30)
    rsc_memory_bound: float | None = s_float(None)
    rsc_disk_bound: float | None = s_float(None)
    rsc_bandwidth_bound: float | None = s_float(None)
    delay_bound: float | None = s_float(None, hi=1e9)
    min_quorum: int | None = s_int(None, **_COUNT)
    target_nresults: int | None = s_int(None, **_COUNT)
    max_error_results: int | None = s_int(None, **_COUNT)
    max_total_results: int | None = s_int(None, **_COUNT)
    max_success_results: int | None = s_int(None, **_COUNT)
    size_class: int | None = s_int(None, lo=-1, hi=1000)
    batch: int | None = s_int(None, lo=0)
    priority: int | None = s_int(None)
    credit: float | None = s_float(None)
    keywords: str | None = s_str(None)


@dataclass(frozen=True, slots=True)
class InputTemplate:
    files: tuple[InputFileTemplate, ...] = s_nodes(InputFileTemplate, tag="file_info")
    workunit: WorkunitTemplate = field(default=WorkunitTemplate(), metadata=node_meta(WorkunitTemplate))


@dataclass(frozen=True, slots=True)
class OutputFileTemplate:
    name: TemplateString = field(default=TemplateString(), metadata=custom_meta())
    generated_locally: bool = s_bool()
    upload_when_present: bool = s_bool()
    max_nbytes: float = s_float(0.0, hi=1e15)
    url: TemplateString = field(default=TemplateString(), metadata=custom_meta())
    gzip_when_done: bool = s_bool()
    no_delete: bool = s_bool()


@dataclass(frozen=True, slots=True)
class OutputFileRefTemplate:
    file_name: TemplateString = field(default=TemplateString(), metadata=custom_meta())
    open_name: str = s_str()
    copy_file: bool = s_bool()
    optional: bool = s_bool()


@dataclass(frozen=True, slots=True)
class ResultTemplate:
    file_refs: tuple[OutputFileRefTemplate, ...] = s_nodes(OutputFileRefTemplate, tag="file_ref")
    report_immediately: bool = s_bool()


@dataclass(frozen=True, slots=True)
class OutputTemplate:
    files: tuple[OutputFileTemplate, ...] = s_nodes(OutputFileTemplate, tag="file_info")
    result: ResultTemplate = field(default=ResultTemplate(), metadata=node_meta(ResultTemplate))


@dataclass(frozen=True, slots=True)
class StagedFile:
    """An input file as stored for download (what create_work's infiles became)."""

    name: str
    download_urls: tuple[str, ...]
    md5_cksum: str
    nbytes: float
    gzipped_urls: tuple[str, ...] = ()
    gzipped_nbytes: float | None = None


@dataclass(frozen=True, slots=True)
class ResolvedOutput:
    file_infos: tuple[FileInfoDesc, ...]  # without xml_signature: sign upload_certificate_text
    file_refs: tuple[FileRef, ...]
    report_immediately: bool


def outfile_base(result_name: str, nonce: int) -> str:
    """BOINC's base for output names: ``<OUTFILE_0/>`` → ``{result}_r{nonce}_0``."""
    return f"{result_name}_r{nonce}_"


# ---------------------------------------------------------------------------- parse


def _template_string(element: etree._Element | None, where: str) -> TemplateString:
    if element is None:
        return TemplateString()
    parts: list[str | Macro] = [element.text] if element.text else []
    for child in element:
        if not isinstance(child.tag, str) or not _MACRO_RE.fullmatch(child.tag) or len(child) or child.text:
            raise ProtocolError(f"{where}: only <OUTFILE_n/> and <UPLOAD_URL/> may appear here")
        parts.append(Macro(child.tag))
        if child.tail:
            parts.append(child.tail)
    return TemplateString(tuple(parts))


def _last(element: etree._Element, tag: str) -> etree._Element | None:
    found = [c for c in child_elements(element) if c.tag == tag]
    return found[-1] if found else None


def _output_file_hook(element: etree._Element, where: str) -> dict[str, Any]:
    return {
        "name": _template_string(_last(element, "name"), f"{where}/name"),
        "url": _template_string(_last(element, "url"), f"{where}/url"),
    }


def _output_ref_hook(element: etree._Element, where: str) -> dict[str, Any]:
    return {"file_name": _template_string(_last(element, "file_name"), f"{where}/file_name")}


def _no_json(data: Any, where: str) -> dict[str, Any]:
    raise ProtocolError(f"{where}: templates have no JSON form")


register_hooks(OutputFileTemplate, xml=_output_file_hook, json=_no_json)
register_hooks(OutputFileRefTemplate, xml=_output_ref_hook, json=_no_json)


def _as_bytes(body: bytes | str) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else body


def parse_input_template(body: bytes | str) -> InputTemplate:
    root = parse_document(_as_bytes(body), root="input_template", max_bytes=MAX_TEMPLATE_BYTES)
    parsed: InputTemplate = from_xml(InputTemplate, root, "input_template")
    files = tuple(
        f
        if f.number is not None
        else InputFileTemplate(i, f.sticky, f.no_delete, f.gzip, f.urls, f.nbytes, f.md5_cksum)
        for i, f in enumerate(parsed.files)
    )
    template = InputTemplate(files, parsed.workunit)
    _check_input(template)
    return template


def _check_input(template: InputTemplate) -> None:
    numbers = [f.number for f in template.files]
    if len(set(numbers)) != len(numbers):
        raise ProtocolError("input_template: file_info numbers must be unique")
    for ref in template.workunit.file_refs:
        if ref.file_number not in numbers:
            raise ProtocolError(f"input_template: file_ref to unknown file_number {ref.file_number}")
    wu = template.workunit
    if wu.min_quorum and wu.target_nresults and wu.target_nresults < wu.min_quorum:
        raise ProtocolError("input_template: target_nresults is below min_quorum")
    if wu.target_nresults and wu.max_total_results and wu.max_total_results < wu.target_nresults:
        raise ProtocolError("input_template: max_total_results is below target_nresults")


def parse_output_template(body: bytes | str) -> OutputTemplate:
    root = parse_document(_as_bytes(body), root="output_template", max_bytes=MAX_TEMPLATE_BYTES)
    template: OutputTemplate = from_xml(OutputTemplate, root, "output_template")
    for file in template.files:
        if not file.name.parts:
            raise ProtocolError("output_template: every file_info needs a <name>")
        if file.max_nbytes <= 0:
            raise ProtocolError("output_template: every file_info needs max_nbytes > 0")
    return template


# --------------------------------------------------------------------- instantiate


def instantiate_input(
    template: InputTemplate, staged: Sequence[StagedFile]
) -> tuple[tuple[FileInfoDesc, ...], tuple[FileRef, ...]]:
    """The workunit's input file_infos and file_refs; ``staged[i]`` is the i-th file_info."""
    if len(staged) != len(template.files):
        raise ProtocolError(f"input_template has {len(template.files)} files, {len(staged)} given")
    by_number = {}
    infos = []
    for spec, file in zip(template.files, staged, strict=True):
        by_number[spec.number] = file.name
        infos.append(
            FileInfoDesc(
                name=file.name,
                download_urls=file.download_urls,
                gzipped_urls=file.gzipped_urls if spec.gzip else (),
                gzipped_nbytes=file.gzipped_nbytes if spec.gzip else None,
                md5_cksum=file.md5_cksum,
                nbytes=file.nbytes,
                sticky=spec.sticky,
                no_delete=spec.no_delete,
            )
        )
    refs = tuple(
        FileRef(by_number[r.file_number], r.open_name, copy_file=r.copy_file, optional=r.optional)
        for r in template.workunit.file_refs
    )
    return tuple(infos), refs


def instantiate_output(template: OutputTemplate, *, outfile_base: str, upload_url: str) -> ResolvedOutput:
    """Substitute the macros: output file_infos (to sign) and the result's file_refs."""
    infos = []
    for file in template.files:
        name = file.name.substitute(outfile_base=outfile_base, upload_url=upload_url)
        if not is_safe_file_name(name):
            raise ProtocolError(f"output file name {name!r} is not safe")
        url = file.url.substitute(outfile_base=outfile_base, upload_url=upload_url)
        infos.append(
            FileInfoDesc(
                name=name,
                upload_urls=(url,) if url else (),
                max_nbytes=file.max_nbytes,
                generated_locally=file.generated_locally,
                upload_when_present=file.upload_when_present,
                gzip_when_done=file.gzip_when_done,
                no_delete=file.no_delete,
            )
        )
    refs = tuple(
        FileRef(
            r.file_name.substitute(outfile_base=outfile_base, upload_url=upload_url),
            r.open_name,
            copy_file=r.copy_file,
            optional=r.optional,
        )
        for r in template.result.file_refs
    )
    return ResolvedOutput(tuple(infos), refs, template.result.report_immediately)


# --------------------------------------------------------------------------- render


def render_input_template(template: InputTemplate) -> bytes:
    doc = new_document("input_template")
    for file in template.files:
        with doc.block("file_info", _IN) as block:
            render_fields(block, file, scalar_names(InputFileTemplate), client=False, indent=_IN * 2)
    with doc.block("workunit", _IN) as wu:
        for ref in template.workunit.file_refs:
            with wu.block("file_ref", _IN * 2) as block:
                render_fields(block, ref, scalar_names(InputFileRefTemplate), client=False, indent=_IN * 3)
        render_fields(wu, template.workunit, scalar_names(WorkunitTemplate), client=False, indent=_IN * 2)
    return serialize(doc)


def _write_template_string(block: Block, tag: str, value: TemplateString, indent: str) -> None:
    element = block.empty(tag, indent)
    previous: etree._Element | None = None
    for part in value.parts:
        if isinstance(part, Macro):
            previous = etree.SubElement(element, part.name)
        else:
            _append_text(element, previous, part)


def _append_text(element: etree._Element, previous: etree._Element | None, text: str) -> None:
    try:
        if previous is None:
            element.text = (element.text or "") + text
        else:
            previous.tail = (previous.tail or "") + text
    except ValueError as exc:
        raise ProtocolError(f"<{element.tag}>: text cannot be written as XML: {exc}") from None


def render_output_template(template: OutputTemplate) -> bytes:
    doc = new_document("output_template")
    flags = ("generated_locally", "upload_when_present", "max_nbytes")
    for file in template.files:
        with doc.block("file_info", _IN) as block:
            _write_template_string(block, "name", file.name, _IN * 2)
            render_fields(block, file, flags, client=False, indent=_IN * 2)
            _write_template_string(block, "url", file.url, _IN * 2)
            render_fields(block, file, ("gzip_when_done", "no_delete"), client=False, indent=_IN * 2)
    with doc.block("result", _IN) as result:
        for ref in template.result.file_refs:
            with result.block("file_ref", _IN * 2) as block:
                _write_template_string(block, "file_name", ref.file_name, _IN * 3)
                render_fields(
                    block, ref, ("open_name", "copy_file", "optional"), client=False, indent=_IN * 3
                )
        render_fields(result, template.result, ("report_immediately",), client=False, indent=_IN * 2)
    return serialize(doc)
