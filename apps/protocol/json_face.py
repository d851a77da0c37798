"""The JSON form of the messages, validated exactly like the XML form.

``request_from_dict`` reads the shape ``request_to_dict`` writes: field names as keys,
nested messages as objects, tuples as lists, resource types by their wire names, raw
XML blocks as strings. The same field declarations drive both faces, so an XML request
and a JSON request with the same content give equal ``SchedulerRequest`` objects.
Unknown keys are ignored, as unknown XML tags are. Strings are cleaned as the XML face
cleans its body (control characters become ``?``), and nesting has the XML face's bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.protocol import scheduler_reply as _reply_hooks  # noqa: F401 (registers hooks)
from apps.protocol import scheduler_request as _request_hooks  # noqa: F401 (registers hooks)
from apps.protocol.errors import ProtocolError
from apps.protocol.reply_types import SchedulerReply
from apps.protocol.request_types import SchedulerRequest
from apps.protocol.schema import from_dict, to_jsonable
from apps.protocol.xmlsafe import DEFAULT_MAX_DEPTH
from apps.protocol.xmlwrite import xml_safe_text


def request_from_dict(data: Mapping[str, Any]) -> SchedulerRequest:
    """A request from its JSON form; bad types or values → ProtocolError."""
    where = "scheduler_request"
    request: SchedulerRequest = from_dict(SchedulerRequest, _scrubbed(data, where, 1), where)
    return request


def _scrubbed(value: Any, where: str, depth: int) -> Any:
    """``value`` with every string (keys too) cleaned by ``_scrubbed_text``.

    The depth bound also keeps this walk (and from_dict's) clear of Python's recursion limit.
    """
    if isinstance(value, str):
        return _scrubbed_text(value, where)
    if not isinstance(value, Mapping | list | tuple):
        return value
    if depth > DEFAULT_MAX_DEPTH:
        raise ProtocolError(f"{where}: JSON nested deeper than {DEFAULT_MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        cleaned = {}
        for key, item in value.items():
            name = _scrubbed(key, where, depth)
            cleaned[name] = _scrubbed(item, f"{where}/{name}", depth + 1)
        return cleaned
    return type(value)(_scrubbed(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))


def _scrubbed_text(text: str, where: str) -> str:
    """``text`` as the XML face would read it: the scheduler request parser turns control
    characters into ``?`` and refuses U+FFFE and U+FFFF; a lone surrogate, which no UTF-8
    body can hold, becomes ``?`` too."""
    if "\ufffe" in text or "\uffff" in text:
        raise ProtocolError(f"{where}: U+FFFE and U+FFFF are not allowed in XML or JSON requests")
    return xml_safe_text(text)


def request_to_dict(request: SchedulerRequest) -> dict[str, Any]:
    result: dict[str, Any] = to_jsonable(request)
    return result


def reply_from_dict(data: Mapping[str, Any]) -> SchedulerReply:
    reply: SchedulerReply = from_dict(SchedulerReply, data, "scheduler_reply")
    return reply


def reply_to_dict(reply: SchedulerReply) -> dict[str, Any]:
    result: dict[str, Any] = to_jsonable(reply)
    return result
