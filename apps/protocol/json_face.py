"""The JSON form of the messages, validated exactly like the XML form.

``request_from_dict`` reads the shape ``request_to_dict`` writes: field names as keys,
nested messages as objects, tuples as lists, resource types by their wire names, raw
XML blocks as strings. The same field declarations drive both faces, so an XML request
and a JSON request with the same content give equal ``SchedulerRequest`` objects.
Unknown keys are ignored, as unknown XML tags are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.protocol import scheduler_reply as _reply_hooks  # noqa: F401 (registers hooks)
from apps.protocol import scheduler_request as _request_hooks  # noqa: F401 (registers hooks)
from apps.protocol.reply_types import SchedulerReply
from apps.protocol.request_types import SchedulerRequest
from apps.protocol.schema import from_dict, to_jsonable


def request_from_dict(data: Mapping[str, Any]) -> SchedulerRequest:
    """A request from its JSON form; bad types or values → ProtocolError."""
    request: SchedulerRequest = from_dict(SchedulerRequest, data, "scheduler_request")
    return request


def request_to_dict(request: SchedulerRequest) -> dict[str, Any]:
    result: dict[str, Any] = to_jsonable(request)
    return result


def reply_from_dict(data: Mapping[str, Any]) -> SchedulerReply:
    reply: SchedulerReply = from_dict(SchedulerReply, data, "scheduler_reply")
    return reply


def reply_to_dict(reply: SchedulerReply) -> dict[str, Any]:
    result: dict[str, Any] = to_jsonable(reply)
    return result
