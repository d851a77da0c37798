"""Building output documents with Element/SubElement, laid out like BOINC's own programs.

Whitespace between elements is set explicitly (``text``/``tail``), so the output has the
line structure of what the stock client and server print while every value still goes
through lxml's escaping. Nothing here formats XML as strings.
"""

from __future__ import annotations

from types import TracebackType

from lxml import etree

from apps.protocol.errors import ProtocolError
from apps.protocol.xmlsafe import parse_fragment


class Block:
    """An element being filled with children, one per line at a chosen indent."""

    __slots__ = ("_close_indent", "_last", "el")

    def __init__(self, el: etree._Element, close_indent: str = "") -> None:
        self.el = el
        self._close_indent = close_indent
        self._last: etree._Element | None = None

    def _attach(self, child: etree._Element, indent: str) -> etree._Element:
        whitespace = "\n" + indent
        if self._last is None:
            self.el.text = whitespace
        else:
            self._last.tail = whitespace
        self._last = child
        return child

    def leaf(self, tag: str, text: str, indent: str = "", attrib: dict[str, str] | None = None) -> None:
        try:
            child = etree.SubElement(self.el, tag, attrib or {})
            child.text = text
        except ValueError as exc:
            raise ProtocolError(f"<{tag}>: value cannot be written as XML: {exc}") from None
        self._attach(child, indent)

    def flag(self, tag: str, indent: str = "") -> None:
        self._attach(etree.SubElement(self.el, tag), indent)

    def empty(self, tag: str, indent: str = "") -> etree._Element:
        """An empty child the caller fills itself (mixed content such as template macros)."""
        return self._attach(etree.SubElement(self.el, tag), indent)

    def block(self, tag: str, indent: str = "", close_indent: str | None = None) -> Block:
        child = self._attach(etree.SubElement(self.el, tag), indent)
        return Block(child, indent if close_indent is None else close_indent)

    def raw(self, tag: str, content: str, indent: str = "") -> None:
        """``<tag>`` holding XML content given as text (preferences and the like)."""
        fragment = parse_fragment(content)
        child = self._attach(etree.SubElement(self.el, tag), indent)
        # Never <tag/>: the client copies raw content up to "</tag>" and would not find it.
        child.text = fragment.text if fragment.text is not None or len(fragment) else ""
        for node in list(fragment):
            child.append(node)

    def inline(self, content: str, before: str = "\n") -> None:
        """XML content given as text, placed directly after the last child."""
        fragment = parse_fragment(content)
        self.text_after_last(before + (fragment.text or ""))
        for node in list(fragment):
            self.el.append(node)
            self._last = node

    def text_after_last(self, text: str) -> None:
        """Character data after the last child (mixed content such as ``stderr_out``)."""
        try:
            if self._last is None:
                self.el.text = (self.el.text or "") + text
            else:
                self._last.tail = (self._last.tail or "") + text
        except ValueError as exc:
            raise ProtocolError(f"<{self.el.tag}>: text cannot be written as XML: {exc}") from None

    def close(self) -> None:
        whitespace = "\n" + self._close_indent
        if self._last is None:
            if self.el.text is None:
                self.el.text = whitespace
        elif self._last.tail is None:  # text placed after the last child is kept
            self._last.tail = whitespace

    def __enter__(self) -> Block:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def new_document(tag: str) -> Block:
    return Block(etree.Element(tag))


def serialize(document: Block) -> bytes:
    """Close the root and return UTF-8 bytes (no XML declaration, trailing newline)."""
    document.close()
    document.el.tail = "\n"
    return etree.tostring(document.el, encoding="utf-8")
