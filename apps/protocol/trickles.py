"""Trickle message bodies: the XML content of ``<msg_from_host>`` and ``<trickle_down>``.

A stock client copies the file a task wrote into the request verbatim, so one task that
writes a body that is not XML would make every request of its host unreadable, and the
client would send it again, unacknowledged, on every RPC. ``malformed_trickles_set_aside``
replaces such a block by an empty one marked with the parse error before the request is
parsed; the scheduler logs it and acknowledges it like the others, so the client deletes it.
"""

from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape, quoteattr

from apps.protocol.errors import ProtocolError
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_document, parse_fragment

# The attribute a set-aside block carries (a client never writes attributes there).
PROBLEM_ATTRIBUTE = "cobblestone_problem"

_BLOCK = re.compile(rb"<msg_from_host>(.*?)</msg_from_host>", re.DOTALL)
_NAME = re.compile(rb"<result_name>([^<]*)</result_name>")
_TIME = re.compile(rb"<time>\s*(\d{1,12})\s*</time>")


def malformed_trickles_set_aside(body: bytes, *, max_bytes: int) -> bytes:
    """``body`` with each ``<msg_from_host>`` whose content is not XML replaced by an empty
    one that keeps its result name and time and says what was wrong."""
    if not isinstance(body, bytes) or b"<msg_from_host>" not in body:
        return body
    changed = False

    def check(match: re.Match[bytes]) -> bytes:
        nonlocal changed
        content = match.group(1)
        try:
            parse_document(
                b"<fragment>" + content + b"</fragment>",
                root="fragment",
                max_bytes=max_bytes,
                scrub_controls=True,
            )
        except ProtocolError as exc:
            changed = True
            name = _NAME.search(content)
            sent = _TIME.search(content)
            result_name = name.group(1).decode("utf-8", "replace") if name else ""
            return (
                f"<msg_from_host {PROBLEM_ATTRIBUTE}={quoteattr(str(exc)[:200])}>"
                f"<result_name>{escape(result_name[:254])}</result_name>"
                f"<time>{int(sent.group(1)) if sent else 0}</time></msg_from_host>"
            ).encode()
        return match.group(0)

    fixed = _BLOCK.sub(check, body)
    return fixed if changed else body


def trickle_leaf(body: str, tag: str) -> str | None:
    """The text of the last ``<tag>`` at the top of a trickle body, or None if there is none
    (or the body is not XML)."""
    try:
        fragment = parse_fragment(body)
    except ProtocolError:
        return None
    found = [c for c in child_elements(fragment) if c.tag == tag]
    return leaf_text(found[-1]).strip() if found else None


def trickle_number(body: str, tag: str) -> float | None:
    """``trickle_leaf`` read as a finite number, or None."""
    text = trickle_leaf(body, tag)
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def trickle_down_body(variety: str, content: str) -> str:
    """The body of a trickle-down: its ``<variety>`` then the project's content, as a
    trickle-up body has it. Raises ProtocolError if ``content`` is not XML content."""
    parse_fragment(content)
    return f"<variety>{escape(variety)}</variety>\n{content.strip()}"
