"""``<scheduler_reply>``: render (server side, fixed order) and parse (client side)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import cache
from typing import Any

from lxml import etree

from apps.core.domain.resources import ProcType
from apps.protocol.errors import ProtocolError
from apps.protocol.filenames import is_safe_file_name
from apps.protocol.reply_types import (
    FileInfoDesc,
    FileRef,
    MessagePriority,
    ReplyMessage,
    SchedulerReply,
    TrickleDown,
)
from apps.protocol.request_types import CoprocUsage
from apps.protocol.schema import Kind, from_xml, register_hooks, spec_of, value_writer
from apps.protocol.xmlsafe import child_elements, inner_xml, leaf_text, parse_document, parse_fragment
from apps.protocol.xmlwrite import Block, new_document, serialize

DEFAULT_MAX_REPLY_BYTES = 64 * 1024 * 1024
# The client treats a <url> as an upload URL iff it contains this.
UPLOAD_URL_MARKER = "file_upload_handler"
_NEST = "    "
_RAW_FIELDS = ("project_preferences", "global_preferences", "gui_urls", "rss_feeds")
_LEGACY_NO_APPS = {"no_cpu_apps": ProcType.CPU, "no_cuda_apps": ProcType.NVIDIA, "no_ati_apps": ProcType.ATI}


def render_reply(reply: SchedulerReply) -> bytes:
    """The reply with Element/SubElement in the fixed order of ``SchedulerReply``'s fields."""
    doc = new_document("scheduler_reply")
    render_message(doc, reply, "")
    return serialize(doc)


def error_reply(message: str, *, request_delay: float = 3600.0) -> bytes:
    """A well-formed reply carrying only a notice and a request_delay (e.g. bad account key)."""
    return render_reply(
        SchedulerReply(messages=(ReplyMessage(message, MessagePriority.NOTICE),), request_delay=request_delay)
    )


def parse_reply(body: bytes, *, max_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> SchedulerReply:
    """Parse a reply as a client would (for the emulator and tests)."""
    root = parse_document(body, root="scheduler_reply", max_bytes=max_bytes)
    reply: SchedulerReply = from_xml(SchedulerReply, root, "scheduler_reply")
    return reply


# --------------------------------------------------------------------------- render

Renderer = Callable[[Block, Any, str], None]
_VALUE, _CUSTOM, _NESTED = 0, 1, 2


def render_message(block: Block, obj: Any, indent: str) -> None:
    """Write the fields of a reply-side message (server layout) into ``block``."""
    _validate(obj)
    for name, write, tag, shape in _render_plan(type(obj)):  # type: ignore[arg-type]  # mypy takes type[Any] for unhashable
        value = getattr(obj, name)
        if shape is _NESTED:
            for item in value:
                with block.block(tag, indent) as child:
                    render_message(child, item, indent + _NEST)
        elif value is not None or shape is _CUSTOM:  # a custom renderer decides about None
            write(block, value, indent)


@cache
def _render_plan(cls: type) -> tuple[tuple[str, Renderer, str, int], ...]:
    """Per message class, once: each field's writer (its custom renderer, or the one its
    spec gives), its tag and its shape (value, custom, or a list of nested messages)."""
    plan = []
    for f in fields(cls):
        spec = spec_of(f)
        tag = (spec.tag or f.name) if spec is not None else f.name
        custom = _RENDERERS.get((cls, f.name))
        if custom is not None:
            plan.append((f.name, custom, tag, _CUSTOM))
        elif spec is None:
            raise ProtocolError(f"{f.name}: not a declared field")
        elif spec.kind is Kind.NODES:
            plan.append((f.name, _no_writer, tag, _NESTED))
        else:
            plan.append(
                (f.name, value_writer(spec, tag, client=False, optional=f.default is None), tag, _VALUE)
            )
    return tuple(plan)


def _no_writer(block: Block, value: Any, indent: str) -> None:
    raise AssertionError("nested messages are written by render_message")


def _validate(obj: Any) -> None:
    if isinstance(obj, FileInfoDesc):
        if not is_safe_file_name(obj.name):
            raise ProtocolError(f"file_info: unsafe file name {obj.name!r}")
        if obj.upload_urls and not obj.max_nbytes:
            raise ProtocolError(f"file_info {obj.name}: an upload needs max_nbytes > 0")
    elif isinstance(obj, FileRef) and not is_safe_file_name(obj.file_name):
        raise ProtocolError(f"file_ref: unsafe file name {obj.file_name!r}")
    elif isinstance(obj, CoprocUsage) and obj.type is ProcType.CPU:
        raise ProtocolError("app_version coproc: CPU is not a coprocessor")


def _messages(block: Block, value: tuple[ReplyMessage, ...], indent: str) -> None:
    for message in value:
        block.leaf("message", message.text, indent, {"priority": MessagePriority(message.priority).value})


def _raw(tag: str) -> Renderer:
    def render(block: Block, value: str | None, indent: str) -> None:
        if value is not None:
            block.raw(tag, value, indent)

    return render


def _no_rsc_apps(block: Block, value: tuple[ProcType, ...], indent: str) -> None:
    for proc_type in value:
        block.leaf("no_rsc_apps", ProcType(proc_type).value, indent)


def _download_urls(block: Block, value: tuple[str, ...], indent: str) -> None:
    for url in value:
        block.leaf("download_url" if UPLOAD_URL_MARKER in url else "url", url, indent)


def _upload_urls(block: Block, value: tuple[str, ...], indent: str) -> None:
    for url in value:
        block.leaf("url" if UPLOAD_URL_MARKER in url else "upload_url", url, indent)


def _coproc_type(block: Block, value: ProcType, indent: str) -> None:
    block.leaf("type", ProcType(value).value, indent)


def _trickle_body(block: Block, value: str, indent: str) -> None:
    if value:
        block.inline(value)


_RENDERERS: dict[tuple[type, str], Renderer] = {
    (SchedulerReply, "messages"): _messages,
    (SchedulerReply, "no_rsc_apps"): _no_rsc_apps,
    (FileInfoDesc, "download_urls"): _download_urls,
    (FileInfoDesc, "upload_urls"): _upload_urls,
    (CoprocUsage, "type"): _coproc_type,
    (TrickleDown, "body"): _trickle_body,
    **{(SchedulerReply, name): _raw(name) for name in _RAW_FIELDS},
}


# ---------------------------------------------------------------------------- parse


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"{where}: expected a list of strings")
    return tuple(v.strip() for v in value if v.strip())


def _canonical_raw(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProtocolError(f"{where}: expected a string")
    return inner_xml(parse_fragment(value))


def _proc_types(names: list[str]) -> tuple[ProcType, ...]:
    result = []
    for name in names:
        try:
            result.append(ProcType.from_wire(name))
        except ValueError:
            continue  # a resource this side does not know: nothing to stop asking for
    return tuple(result)


def _priority(value: Any) -> MessagePriority:
    try:
        return MessagePriority(value)
    except ValueError:
        return MessagePriority.LOW


def _reply_from_xml(root: etree._Element, where: str) -> dict[str, Any]:
    result: dict[str, Any] = {"messages": (), "no_rsc_apps": ()}
    messages: list[ReplyMessage] = []
    no_apps: list[str] = []
    for child in child_elements(root):
        if child.tag == "message":
            messages.append(ReplyMessage(leaf_text(child).strip(), _priority(child.get("priority"))))
        elif child.tag in _RAW_FIELDS:
            result[child.tag] = inner_xml(child)
        elif child.tag == "no_rsc_apps":
            no_apps.append(leaf_text(child))
        elif child.tag in _LEGACY_NO_APPS and leaf_text(child).strip() in ("", "1"):
            no_apps.append(_LEGACY_NO_APPS[child.tag].value)
    result["messages"] = tuple(messages)
    result["no_rsc_apps"] = _proc_types(no_apps)
    return result


def _reply_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    messages = data.get("messages") or []
    if not isinstance(messages, list | tuple):
        raise ProtocolError(f"{where}/messages: expected a list")
    parsed = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("text"), str):
            raise ProtocolError(f"{where}/messages[{i}]: expected {{text, priority}}")
        parsed.append(ReplyMessage(message["text"].strip(), _priority(message.get("priority", "low"))))
    result: dict[str, Any] = {
        "messages": tuple(parsed),
        "no_rsc_apps": _proc_types(list(_strings(data.get("no_rsc_apps") or [], f"{where}/no_rsc_apps"))),
    }
    for name in _RAW_FIELDS:
        result[name] = _canonical_raw(data.get(name), f"{where}/{name}")
    return result


def _file_info_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    downloads: list[str] = []
    uploads: list[str] = []
    for child in child_elements(element):
        url = leaf_text(child).strip()
        if not url:
            continue
        if child.tag == "url":
            (uploads if UPLOAD_URL_MARKER in url else downloads).append(url)
        elif child.tag == "download_url":
            downloads.append(url)
        elif child.tag == "upload_url":
            uploads.append(url)
    return {"download_urls": tuple(downloads), "upload_urls": tuple(uploads)}


def _file_info_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {
        name: _strings(data.get(name) or [], f"{where}/{name}") for name in ("download_urls", "upload_urls")
    }


def _trickle_down_from_xml(element: etree._Element, where: str) -> dict[str, Any]:
    return {"body": inner_xml(element, skip=frozenset({"result_name", "time"})).strip()}


def _trickle_down_from_dict(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {"body": (_canonical_raw(data.get("body", ""), f"{where}/body") or "").strip()}


register_hooks(SchedulerReply, xml=_reply_from_xml, json=_reply_from_dict)
register_hooks(FileInfoDesc, xml=_file_info_from_xml, json=_file_info_from_dict)
register_hooks(TrickleDown, xml=_trickle_down_from_xml, json=_trickle_down_from_dict)
