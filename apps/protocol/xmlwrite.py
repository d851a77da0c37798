"""Writing output documents laid out like BOINC's own programs, one child per line.

A document is written front to back into one list of strings: each ``Block`` is an
element being filled, and a nested block is opened with ``with`` and closed before its
parent goes on, so every piece lands in document order. Whitespace between elements is
chosen by the caller (the indent), so the output has the line structure of what the
stock client and server print.

Every value is checked and escaped here, as libxml2 serializes it (a property test holds
the two byte-identical): text and attribute values with characters XML 1.0 cannot carry
(C0 controls other than tab, newline and carriage return, U+FFFE, U+FFFF, lone
surrogates) are refused, tag names are checked once by lxml, and XML given as text
(preferences, trickle bodies) is parsed by the hardened parser and re-serialized, never
pasted in. Building the same document with lxml's Element/SubElement cost three times
as much, most of a scheduler reply's rendering time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from types import TracebackType
from typing import Literal

from lxml import etree

from apps.protocol.errors import ProtocolError
from apps.protocol.xmlsafe import parse_fragment

_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;", "\n": "&#10;", "\t": "&#9;"}
)
_NEEDS_ESCAPE = re.compile("[&<>\r]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_NOT_XML_MESSAGE = "All strings must be XML compatible: Unicode or ASCII, no NULL bytes or control characters"
_checked_tags: set[str] = set()


def _text(tag: str, text: str, what: str = "value") -> str:
    """``text`` escaped for element content; ProtocolError if XML cannot carry it."""
    if not isinstance(text, str):
        raise ProtocolError(f"<{tag}>: {what} cannot be written as XML: not a string")
    # Most values are names and numbers: printable text has no control character, lone
    # surrogate or non-character (Unicode calls none of them printable), so two scans
    # in C settle it.
    if text.isprintable():
        return (
            text if "&" not in text and "<" not in text and ">" not in text else text.translate(_TEXT_ESCAPES)
        )
    if _NOT_XML.search(text) is not None:
        raise ProtocolError(f"<{tag}>: {what} cannot be written as XML: {_NOT_XML_MESSAGE}")
    return text.translate(_TEXT_ESCAPES) if _NEEDS_ESCAPE.search(text) is not None else text


def xml_safe_text(text: str) -> str:
    """``text`` with each character XML cannot carry replaced by ``?``, as the parser treats
    control bytes on input: for names stored from outside the scheduler (accounts, teams,
    venues) that a reply must carry whatever they hold."""
    return text if text.isprintable() else _NOT_XML.sub("?", text)


def _attributes(tag: str, attrib: dict[str, str]) -> str:
    parts = []
    for name, value in attrib.items():
        _check_tag(name)
        if not isinstance(value, str) or _NOT_XML.search(value) is not None:
            raise ProtocolError(f"<{tag}>: value cannot be written as XML: {_NOT_XML_MESSAGE}")
        parts.append(f' {name}="{value.translate(_ATTR_ESCAPES)}"')
    return "".join(parts)


def _check_tag(tag: str) -> None:
    if tag in _checked_tags:
        return
    try:
        etree.Element(tag)  # lxml knows what a valid name is
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"<{tag}>: value cannot be written as XML: {exc}") from None
    _checked_tags.add(tag)


def _inner(fragment: etree._Element) -> str:
    """The content of a ``<fragment>`` from parse_fragment, serialized (text, children, tails)."""
    text = etree.tostring(fragment, encoding="unicode", with_tail=False)
    return "" if text == "<fragment/>" else text[len("<fragment>") : -len("</fragment>")]


class Block:
    """An element being filled with children, one per line at a chosen indent.

    ``_pending`` is the character data after the last child (or, before any child, the
    element's text) not written yet: the next child replaces it with its line break and
    indent, ``close`` writes it (or a line break) before the end tag.
    """

    __slots__ = ("_close_indent", "_parts", "_pending", "tag")

    def __init__(self, parts: list[str | etree._Element], tag: str, close_indent: str = "") -> None:
        self._parts = parts
        self.tag = tag
        self._close_indent = close_indent
        self._pending: str | None = None

    def _attach(self, indent: str) -> list[str | etree._Element]:
        parts = self._parts
        parts.append("\n" + indent)
        self._pending = None
        return parts

    def leaf(self, tag: str, text: str, indent: str = "", attrib: dict[str, str] | None = None) -> None:
        if tag not in _checked_tags:
            _check_tag(tag)
        escaped = _text(tag, text)
        head = f"<{tag}{_attributes(tag, attrib)}>" if attrib else f"<{tag}>"
        self._attach(indent).append(f"{head}{escaped}</{tag}>")

    def flag(self, tag: str, indent: str = "") -> None:
        _check_tag(tag)
        self._attach(indent).append(f"<{tag}/>")

    def empty(self, tag: str, indent: str = "") -> etree._Element:
        """An empty child the caller fills itself (mixed content such as template macros);
        it is serialized when the document is."""
        _check_tag(tag)
        element = etree.Element(tag)
        self._attach(indent).append(element)
        return element

    def block(
        self,
        tag: str,
        indent: str = "",
        close_indent: str | None = None,
        attrib: dict[str, str] | None = None,
    ) -> Block:
        """A child element to fill; use it as ``with parent.block(...) as child:``."""
        _check_tag(tag)
        self._attach(indent).append(f"<{tag}{_attributes(tag, attrib)}>" if attrib else f"<{tag}>")
        return Block(self._parts, tag, indent if close_indent is None else close_indent)

    def raw(self, tag: str, content: str, indent: str = "") -> None:
        """``<tag>`` holding XML content given as text (preferences and the like)."""
        inner = _inner(parse_fragment(content))
        _check_tag(tag)
        # Never <tag/>: the client copies raw content up to "</tag>" and would not find it.
        self._attach(indent).append(f"<{tag}>{inner}</{tag}>")

    def inline(self, content: str, before: str = "\n") -> None:
        """XML content given as text, placed directly after the last child."""
        fragment = parse_fragment(content)
        self.text_after_last(before + (fragment.text or ""))
        children = list(fragment)
        if not children:
            return
        last_tail = children[-1].tail
        children[-1].tail = None
        fragment.text = self._pending
        self._parts.append(_inner(fragment))
        self._pending = last_tail  # the next child replaces it, as it would a child's tail

    def text_after_last(self, text: str) -> None:
        """Character data after the last child (mixed content such as ``stderr_out``)."""
        _text(self.tag, text, "text")
        self._pending = (self._pending or "") + text

    def close(self) -> None:
        pending = self._pending
        self._parts.append(
            ("\n" + self._close_indent if pending is None else _text(self.tag, pending, "text"))
            + f"</{self.tag}>"
        )
        self._pending = None

    def __enter__(self) -> Block:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def flat_element(tag: str, children: Iterable[tuple[str, str | Literal[True]]]) -> str:
    """``<tag>`` holding one child per line indented by one space, a text leaf or (for
    ``True``) an empty flag element, as ``new_document`` with ``leaf``/``flag`` and
    ``serialize`` write it but without the final line break: the same checks and
    escapes, without a Block per element, for files of millions of such records."""
    if tag not in _checked_tags:
        _check_tag(tag)
    parts = [f"<{tag}>"]
    for child, text in children:
        if child not in _checked_tags:
            _check_tag(child)
        parts.append(f"\n <{child}/>" if text is True else f"\n <{child}>{_text(child, text)}</{child}>")
    parts.append(f"\n</{tag}>")
    return "".join(parts)


def new_document(tag: str, attrib: dict[str, str] | None = None) -> Block:
    _check_tag(tag)
    return Block([f"<{tag}{_attributes(tag, attrib)}>" if attrib else f"<{tag}>"], tag)


def serialize(document: Block) -> bytes:
    """Close the root and return UTF-8 bytes (no XML declaration, trailing newline)."""
    document.close()
    parts = document._parts
    parts.append("\n")
    return "".join(
        part if isinstance(part, str) else etree.tostring(part, encoding="unicode", with_tail=False)
        for part in parts
    ).encode("utf-8")
