"""BOINC create_work templates → JobSpec (the workunit and its results' output files)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from apps.protocol import ProtocolError
from apps.protocol.templates import InputTemplate, OutputTemplate, parse_input_template, parse_output_template
from apps.work.services.create import (
    DEFAULT_OUTPUTS,
    WU_PARAMS,
    InputSpec,
    JobSpec,
    OutputSpec,
    RemoteFile,
    WorkError,
)


def load_input_template(path: Path) -> InputTemplate:
    try:
        return parse_input_template(path.read_bytes())
    except (OSError, ProtocolError) as exc:
        raise WorkError(f"input template {path}: {exc}") from exc


def load_output_template(path: Path) -> OutputTemplate:
    try:
        return parse_output_template(path.read_bytes())
    except (OSError, ProtocolError) as exc:
        raise WorkError(f"output template {path}: {exc}") from exc


def outputs_from_template(template: OutputTemplate | None) -> tuple[OutputSpec, ...]:
    """One OutputSpec per output file_info, with the open name its result file_ref gives."""
    if template is None:
        return DEFAULT_OUTPUTS
    specs = []
    for file in template.files:
        ref = next((r for r in template.result.file_refs if r.file_name == file.name), None)
        if not file.max_nbytes:
            raise WorkError("output template: every file needs <max_nbytes> (the client refuses 0)")
        specs.append(
            OutputSpec(
                open_name=ref.open_name if ref else "",
                max_nbytes=int(file.max_nbytes),
                copy_file=ref.copy_file if ref else True,
                optional=ref.optional if ref else False,
                gzip_when_done=file.gzip_when_done,
            )
        )
    return tuple(specs)


def inputs_from_template(
    template: InputTemplate | None, infiles: Sequence[Path | RemoteFile]
) -> tuple[InputSpec, ...]:
    """Command-line input files, in order, become the template's file_infos 0, 1, ...; a
    remote file is known as ``jf_<md5>``, as BOINC names it."""
    bases = [_base_spec(f) for f in infiles]
    if template is None:
        return tuple(replace(base, open_name=base.name or _path_name(base)) for base in bases)
    if len(infiles) != len(template.files):
        raise WorkError(f"the input template has {len(template.files)} file(s) but {len(infiles)} were given")
    by_number = {f.number if f.number is not None else i: (i, f) for i, f in enumerate(template.files)}
    refs = {r.file_number: r for r in template.workunit.file_refs}
    specs = []
    for number, (i, file) in sorted(by_number.items()):
        ref = refs.get(number)
        base = bases[i]
        specs.append(
            replace(
                base,
                open_name=ref.open_name if ref and ref.open_name else (base.name or _path_name(base)),
                copy_file=ref.copy_file if ref else True,
                sticky=file.sticky,
                no_delete=file.no_delete,
                gzip=file.gzip,
            )
        )
    return tuple(specs)


def _base_spec(f: Path | RemoteFile) -> InputSpec:
    if isinstance(f, RemoteFile):
        return InputSpec(name=f"jf_{f.md5}", remote=f)
    return InputSpec(path=f)


def _path_name(spec: InputSpec) -> str:
    return spec.path.name if spec.path is not None else ""


def job_from_templates(
    *,
    input_template: InputTemplate | None,
    output_template: OutputTemplate | None,
    infiles: Sequence[Path | RemoteFile],
    options: dict[str, object],
) -> JobSpec:
    """Template values first, then command-line options on top (the command line wins)."""
    values: dict[str, Any] = {}
    if input_template is not None:
        wu = input_template.workunit
        values.update({k: getattr(wu, k) for k in WU_PARAMS if getattr(wu, k) is not None})
        if wu.command_line is not None:
            values["command_line"] = wu.command_line
        if wu.priority is not None:
            values["priority"] = wu.priority
        if wu.batch is not None:
            values["batch"] = wu.batch
    values.update({k: v for k, v in options.items() if v is not None})
    return JobSpec(
        name=str(values.pop("name", "") or ""),
        inputs=inputs_from_template(input_template, infiles),
        outputs=outputs_from_template(output_template),
        **values,
    )
