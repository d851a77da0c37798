"""``<scheduler_request>``: parse (server side) and render (client side, 7.20.5 layout)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from lxml import etree

from apps.core.domain.resources import COPROC_TAGS, ProcType
from apps.protocol.errors import ProtocolError
from apps.protocol.request_types import (
    ClientAppVersion,
    Coproc,
    CoprocUsage,
    GlobalPrefs,
    ReportedResult,
    SchedulerRequest,
    TrickleUp,
)
from apps.protocol.schema import from_dict, from_xml, register_hooks, render_fields, scalar_names
from apps.protocol.trickles import PROBLEM_ATTRIBUTE, malformed_trickles_set_aside
from apps.protocol.xmlsafe import child_elements, inner_xml, leaf_text, parse_document, parse_fragment
from apps.protocol.xmlwrite import Block, new_document, serialize

# A suggested bound for parse_request's max_bytes: 64 reported results with 64 KB of
# stderr each fit comfortably.
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024

_IN = "    "
_COPROC_FIELD_TAGS = frozenset(f.name for f in fields(Coproc)) | {"type", "coproc_opencl"}
_COPROC_HEAD = ("count", "name", "available_ram")
_COPROC_REQUEST = ("req_secs", "req_instances", "estimated_delay", "peak_flops")


def parse_request(body: bytes, *, max_bytes: int) -> SchedulerRequest:
    """Parse a request body; anything malformed, hostile or out of range → ProtocolError."""
    fixed = malformed_trickles_set_aside(stderr_cdata_repaired(body), max_bytes=max_bytes)
    grown = len(fixed) - len(body) if fixed is not body else 0
    root = parse_document(fixed, root="scheduler_request", max_bytes=max_bytes + grown, scrub_controls=True)
    result: SchedulerRequest = from_xml(SchedulerRequest, root, "scheduler_request")
    return result


_STDERR_OPEN, _STDERR_CLOSE = b"<stderr_out>", b"</stderr_out>"
_CDATA_OPEN, _CDATA_CLOSE = b"<![CDATA[", b"]]>"


def stderr_cdata_repaired(body: bytes) -> bytes:
    """``body`` with each ``<stderr_out>``'s CDATA section made well-formed.

    The client writes a task's stderr verbatim between ``<![CDATA[`` and ``]]>`` (like its
    own parser, it takes everything up to ``</stderr_out>``), so an application that
    printed ``]]>`` would make the request malformed, and the client would send that report
    again on every RPC. Each inner ``]]>`` is split across two CDATA sections instead,
    which reads back as the same text.
    """
    if not isinstance(body, bytes) or _STDERR_OPEN not in body:
        return body  # (parse_document refuses anything but bytes)
    parts, pos, changed = [], 0, False
    while (start := body.find(_STDERR_OPEN, pos)) >= 0:
        start += len(_STDERR_OPEN)
        end = body.find(_STDERR_CLOSE, start)
        if end < 0:
            break
        inner = body[start:end]
        first, last = inner.find(_CDATA_OPEN), inner.rfind(_CDATA_CLOSE)
        # Only a section holding markers of its own needs it (stderr may print whole ones).
        if first >= 0 and first + len(_CDATA_OPEN) <= last and inner.count(_CDATA_CLOSE) > 1:
            data = inner[first + len(_CDATA_OPEN) : last].replace(_CDATA_CLOSE, b"]]]]><![CDATA[>")
            inner = inner[: first + len(_CDATA_OPEN)] + data + inner[last:]
            changed = True
        parts += [body[pos:start], inner]
        pos = end
    if not changed:
        return body
    parts.append(body[pos:])
    return b"".join(parts)


def prefs_mod_time(body: str) -> float | None:
    """The ``<mod_time>`` of preferences stored as the body of ``<global_preferences>``
    (0 if absent or not a number), or None if the body is not XML."""
    try:
        fragment = parse_fragment(body)
    except ProtocolError:
        return None
    for child in child_elements(fragment):
        if child.tag == "mod_time":
            try:
                value = float(leaf_text(child))
            except ValueError:
                return 0.0
            return value if math.isfinite(value) else 0.0
    return 0.0


def global_prefs_parse(body: str) -> GlobalPrefs:
    """Preferences stored as the body of ``<global_preferences>`` (an account's copy), read
    as a request's are. Raises ProtocolError if the body is not XML or a value is refused."""
    prefs: GlobalPrefs = from_xml(GlobalPrefs, parse_fragment(body), "global_preferences")
    return prefs


# ---------------------------------------------------------------------------- hooks


def _proc_type(name: object, where: str, *, gpu_only: bool = True) -> ProcType:
    if not isinstance(name, str):
        raise ProtocolError(f"{where}: resource type must be a string")
    try:
        proc_type = ProcType.from_wire(name)
    except ValueError:
        raise ProtocolError(f"{where}: unknown resource type {name.strip()[:40]!r}") from None
    if gpu_only and proc_type is ProcType.CPU:
        raise ProtocolError(f"{where}: CPU is not a coprocessor")
    return proc_type


def _last_child(element: etree._Element, tag: str) -> etree._Element | None:
    found = [c for c in child_elements(element) if c.tag == tag]
    return found[-1] if found else None


def _prefs_from_element(element: etree._Element | None, where: str) -> GlobalPrefs | None:
    if element is None:
        return None
    prefs: GlobalPrefs = from_xml(GlobalPrefs, element, where)
    return prefs


def _request_from_xml(root: etree._Element, where: str) -> dict[str, Any]:
    last = {c.tag: c for c in child_elements(root)}  # one pass over the request's children
    working = last.get("working_global_preferences")
    container = last.get("coprocs")
    if container is None:
        host_info = last.get("host_info")
        container = None if host_info is None else _last_child(host_info, "coprocs")
    coprocs: list[Coproc] = []
    for child in child_elements(container) if container is not None else ():
        if _coproc_type(child) is not None:
            coprocs.append(from_xml(Coproc, child, f"{where}/coprocs/{child.tag}"))
    return {
        "working_global_prefs": _prefs_from_element(
            None if working is None else _last_child(working, "global_preferences"),
            f"{where}/working_global_preferences",
        ),
        "global_prefs": _prefs_from_element(last.get("global_preferences"), f"{where}/global_preferences"),
        "coprocs": tuple(coprocs),
    }


def _request_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name in ("working_global_prefs", "global_prefs"):
        value = data.get(name)
        result[name] = None if value is None else from_dict(GlobalPrefs, value, f"{where}/{name}")
    coprocs = data.get("coprocs") or []
    if not isinstance(coprocs, list | tuple):
        raise ProtocolError(f"{where}/coprocs: expected a list")
    result["coprocs"] = tuple(from_dict(Coproc, c, f"{where}/coprocs[{i}]") for i, c in enumerate(coprocs))
    return result


def _prefs_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    return {"raw": inner_xml(element)}


def _prefs_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    # The JSON face carries the block itself; every field is read from it, so the two
    # faces cannot disagree.
    parsed = from_xml(GlobalPrefs, parse_fragment(_string(data.get("raw", ""), f"{where}/raw")), where)
    return {f.name: getattr(parsed, f.name) for f in fields(GlobalPrefs)}


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ProtocolError(f"{where}: expected a string")
    return value


def _coproc_type(element: etree._Element) -> ProcType | None:
    """The GPU type of a ``<coprocs>`` child, or None for one Cobblestone does not know."""
    name = element.tag
    if name == "coproc":
        type_element = _last_child(element, "type")
        name = "" if type_element is None else leaf_text(type_element)
    elif not name.startswith("coproc_"):
        return None
    try:
        proc_type = ProcType.from_wire(name)
    except ValueError:
        return None
    return None if proc_type is ProcType.CPU else proc_type


def _leaves(element: etree._Element, skip: frozenset[str]) -> tuple[tuple[str, str], ...]:
    return tuple(
        (c.tag, leaf_text(c).strip())
        for c in child_elements(element)
        if c.tag not in skip and not any(True for _ in child_elements(c))
    )


def _coproc_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    proc_type = _coproc_type(element)
    if proc_type is None:
        raise ProtocolError(f"{where}: unknown coprocessor")
    opencl = _last_child(element, "coproc_opencl")
    return {
        "type": proc_type,
        "properties": _leaves(element, _COPROC_FIELD_TAGS),
        "opencl": () if opencl is None else _leaves(opencl, frozenset()),
    }


def _pairs(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list | tuple):
        raise ProtocolError(f"{where}: expected a list")
    pairs = []
    for i, pair in enumerate(value):
        if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise ProtocolError(f"{where}[{i}]: expected [tag, text]")
        pairs.append((pair[0], pair[1].strip()))
    return tuple(pairs)


def _coproc_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {
        "type": _proc_type(data.get("type"), f"{where}/type"),
        "properties": _pairs(data.get("properties") or [], f"{where}/properties"),
        "opencl": _pairs(data.get("opencl") or [], f"{where}/opencl"),
    }


def _usage_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    type_element = _last_child(element, "type")
    if type_element is None:
        raise ProtocolError(f"{where}/type: required")
    return {"type": _proc_type(leaf_text(type_element), f"{where}/type")}


def _usage_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {"type": _proc_type(data.get("type"), f"{where}/type")}


def _result_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    stderr = _last_child(element, "stderr_out")
    if stderr is None:
        return {}
    version = ""
    parts = [stderr.text or ""]
    for child in stderr:
        if child.tag == "core_client_version" and not version:
            version = leaf_text(child).strip()
        elif isinstance(child.tag, str):
            parts.append(etree.tostring(child, encoding="unicode", with_tail=False))
        parts.append(child.tail or "")
    return {"core_client_version": version, "stderr_out": "".join(parts).strip("\n")}


def _result_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    result = {}
    for name in ("core_client_version", "stderr_out"):
        value = data.get(name, "")
        if not isinstance(value, str):
            raise ProtocolError(f"{where}/{name}: expected a string")
        result[name] = value.strip() if name == "core_client_version" else value.strip("\n")
    return result


def _trickle_from_element(element: etree._Element, skip: frozenset[str]) -> dict[str, Any]:
    variety = _last_child(element, "variety")
    return {
        "variety": "" if variety is None else leaf_text(variety).strip(),
        "body": inner_xml(element, skip=skip).strip(),
    }


def _trickle_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    problem = element.get(PROBLEM_ATTRIBUTE)
    if problem is not None:
        return {"variety": "", "body": "", "problem": problem}
    return _trickle_from_element(element, frozenset({"result_name", "time"}))


def _trickle_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    body = _string(data.get("body", ""), f"{where}/body")
    return _trickle_from_element(parse_fragment(body), frozenset())


register_hooks(SchedulerRequest, xml=_request_from_xml, json=_request_from_dict)
register_hooks(GlobalPrefs, xml=_prefs_from_xml, json=_prefs_from_dict)
register_hooks(Coproc, xml=_coproc_from_xml, json=_coproc_from_dict)
register_hooks(CoprocUsage, xml=_usage_from_xml, json=_usage_from_dict)
register_hooks(ReportedResult, xml=_result_from_xml, json=_result_from_dict)
register_hooks(TrickleUp, xml=_trickle_from_xml, json=_trickle_from_dict)


# --------------------------------------------------------------------------- render

_HEAD = tuple(
    n
    for n in scalar_names(SchedulerRequest)
    if n not in ("global_prefs_source_email_hash", "cross_project_id", "client_brand", "work_sequences")
)
_RESULT_HEAD = tuple(n for n in scalar_names(ReportedResult))
_APP_VERSION_HEAD = (
    "app_name",
    "version_num",
    "platform",
    "avg_ncpus",
    "max_ncpus",
    "flops",
    "plan_class",
    "api_version",
    "cmdline",
    "file_prefix",
)
_APP_VERSION_TAIL = ("gpu_ram", "dont_throttle", "needs_network")


def render_request(req: SchedulerRequest) -> bytes:
    """The request as the 7.20.5 client writes it (its tag order and layout, ``%f``)."""
    doc = new_document("scheduler_request")
    render_fields(doc, req, _HEAD, client=True, indent=_IN)
    if req.working_global_prefs is not None:
        with doc.block("working_global_preferences") as working:
            working.raw("global_preferences", req.working_global_prefs.raw)
    if req.global_prefs is not None:
        doc.raw("global_preferences", req.global_prefs.raw)
    render_fields(doc, req, ("global_prefs_source_email_hash", "cross_project_id"), client=True, indent="")
    for name in ("time_stats", "net_stats", "host_info"):
        _scalar_block(doc, name, getattr(req, name), indent="", inner=_IN)
    _scalar_block(doc, "disk_usage", req.disk_usage, indent=_IN, inner=_IN * 2)
    if req.coprocs:
        with doc.block("coprocs") as coprocs:
            for coproc in req.coprocs:
                _render_coproc(coprocs, coproc)
    for result in req.results:
        _render_result(doc, result)
    for trickle in req.trickle_ups:
        with doc.block("msg_from_host", "  ") as message:
            render_fields(message, trickle, ("result_name", "time"), client=True, indent="      ")
            if trickle.body:
                message.inline(trickle.body)
    for sticky in req.sticky_files:
        _scalar_block(doc, "file_info", sticky, indent=_IN, inner=_IN * 2)
    with doc.block("app_versions") as versions:
        for version in req.app_versions:
            _render_app_version(versions, version)
    _render_list(doc, "other_results", req.other_results)
    _render_list(doc, "in_progress_results", req.in_progress_results, item_tag="ip_result")
    render_fields(doc, req, ("client_brand",), client=True, indent=_IN)
    if req.work_sequences is not None:
        with doc.block("work_sequences") as sequences:
            render_fields(sequences, req, ("work_sequences",), client=True, indent=_IN)
    return serialize(doc)


def _scalar_block(parent: Block, tag: str, value: Any, *, indent: str, inner: str) -> None:
    with parent.block(tag, indent) as block:
        render_fields(block, value, scalar_names(type(value)), client=True, indent=inner)  # type: ignore[arg-type]  # mypy takes type[Any] for unhashable


def _render_list(parent: Block, tag: str, items: tuple[Any, ...] | None, item_tag: str = "") -> None:
    if items is None:
        return
    with parent.block(tag) as block:
        for item in items:
            _scalar_block(block, item_tag or tag[:-1], item, indent=_IN, inner=_IN * 2)


def _render_coproc(parent: Block, coproc: Coproc) -> None:
    # 7.20.5 layout: count, name, available_ram, have_*, the request, peak_flops, the rest.
    with parent.block(COPROC_TAGS[coproc.type] or "coproc") as block:
        render_fields(block, coproc, _COPROC_HEAD, client=True, indent="   ")
        for tag, text in coproc.properties:
            if tag.startswith("have_"):
                block.leaf(tag, text, "   ")
        render_fields(block, coproc, _COPROC_REQUEST, client=True, indent="   ")
        for tag, text in coproc.properties:
            if not tag.startswith("have_"):
                block.leaf(tag, text, "   ")
        if coproc.opencl:
            with block.block("coproc_opencl", "   ") as opencl:
                for tag, text in coproc.opencl:
                    opencl.leaf(tag, text, "      ")


def _render_result(parent: Block, result: ReportedResult) -> None:
    with parent.block("result") as block:
        render_fields(block, result, _RESULT_HEAD, client=True, indent=_IN)
        with block.block("stderr_out") as stderr:
            if result.core_client_version:
                stderr.leaf("core_client_version", result.core_client_version)
            if result.stderr_out:
                # The client wraps stderr as "\n<![CDATA[\n" + text + "\n]]>\n"; lxml cannot
                # put CDATA after an element, so the same characters go out escaped.
                stderr.text_after_last("\n\n" + result.stderr_out + "\n\n")
        for output in result.files:
            _scalar_block(block, "file_info", output, indent="", inner=_IN)


def _render_app_version(parent: Block, version: ClientAppVersion) -> None:
    with parent.block("app_version") as block:
        render_fields(block, version, _APP_VERSION_HEAD, client=True, indent=_IN)
        for usage in version.coprocs:
            with block.block("coproc", _IN) as coproc:
                # The client names NVIDIA "CUDA" here (APP_VERSION::write).
                coproc.leaf("type", "CUDA" if usage.type is ProcType.NVIDIA else usage.type.value, _IN * 2)
                render_fields(coproc, usage, ("count",), client=True, indent=_IN * 2)
        render_fields(block, version, _APP_VERSION_TAIL, client=True, indent=_IN)
