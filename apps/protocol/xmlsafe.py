"""The one hardened XML parser of the project, and read helpers over its trees.

Every byte of BOINC XML that reaches Cobblestone goes through ``make_parser``:
no entity substitution, no network, no DTD loading, no huge trees, comments and
processing instructions dropped. On top of libxml2's own guards (depth 256, entity
amplification) the reader enforces, before or while parsing:

* a body-size bound (``max_bytes``, checked before any parsing),
* strict UTF-8 (other encodings are refused, whatever the XML declaration says),
* no DOCTYPE at all (checked in the prolog, and again on the first element),
* a nesting-depth bound and an element-count bound, checked as the document streams in.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
from collections.abc import Iterator
from typing import Any

from lxml import etree

from apps.protocol.errors import ProtocolError

DEFAULT_MAX_DEPTH = 32
DEFAULT_MAX_ELEMENTS = 100_000
MAX_FRAGMENT_BYTES = 1024 * 1024

_FEED_CHUNK = 16 * 1024
# C0 control characters other than TAB, LF and CR can never occur in XML 1.0.
_CONTROLS = bytes(b for b in range(0x20) if b not in (0x09, 0x0A, 0x0D))
_SCRUB_TABLE = bytes.maketrans(_CONTROLS, b"?" * len(_CONTROLS))
_DOCTYPE_RE = re.compile(rb"<!DOCTYPE", re.IGNORECASE)
_FIRST_ELEMENT_RE = re.compile(rb"<[A-Za-z_:]")
_XML_ERRORS = (etree.LxmlError, ValueError)  # ValueError covers UnicodeError


# The hardening every parser of the project gets (no entities, network, DTD or huge trees).
_HARDENED: dict[str, Any] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "attribute_defaults": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
    "strip_cdata": True,
    "collect_ids": False,
    "recover": False,
    "encoding": "utf-8",
}


def make_parser() -> etree.XMLPullParser:
    """The hardened incremental parser."""
    return etree.XMLPullParser(events=("start", "end"), **_HARDENED)


class _Stream:
    """Feeds a document into the parser and enforces the depth/count bounds per chunk."""

    def __init__(self, root: str | tuple[str, ...], max_depth: int, max_elements: int) -> None:
        self.parser = make_parser()
        self.root_tags = (root,) if isinstance(root, str) else root
        self.max_depth = max_depth
        self.max_elements = max_elements
        self.depth = 0
        self.count = 0
        self.root: etree._Element | None = None

    def feed(self, data: bytes) -> None:
        for start in range(0, len(data), _FEED_CHUNK):
            self.parser.feed(data[start : start + _FEED_CHUNK])
            self._drain()

    def _drain(self) -> None:
        for event, element in self.parser.read_events():
            if not isinstance(element, etree._Element):
                continue
            if event == "end":
                self.depth -= 1
                continue
            self.depth += 1
            self.count += 1
            if self.root is None:
                self._check_root(element)
            if self.depth > self.max_depth:
                raise ProtocolError(f"XML nested deeper than {self.max_depth} levels")
            if self.count > self.max_elements:
                raise ProtocolError(f"XML has more than {self.max_elements} elements")

    def _check_root(self, element: etree._Element) -> None:
        docinfo = element.getroottree().docinfo
        # libxml2 records any DOCTYPE (even one without an internal subset) as internalDTD.
        if docinfo.internalDTD is not None or docinfo.system_url or docinfo.public_id:
            raise ProtocolError("DOCTYPE is not allowed")
        if element.tag not in self.root_tags:
            expected = " or ".join(f"<{tag}>" for tag in self.root_tags)
            raise ProtocolError(f"expected {expected}, got <{element.tag}>")
        self.root = element


def _prepare(body: bytes, max_bytes: int, *, scrub_controls: bool) -> bytes:
    if not isinstance(body, bytes | bytearray | memoryview):
        raise ProtocolError("body must be bytes")
    body = bytes(body)
    if len(body) > max_bytes:
        raise ProtocolError(f"body of {len(body)} bytes is over the {max_bytes}-byte limit")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        if not scrub_controls:
            raise ProtocolError("body is not valid UTF-8") from None
        # The client copies app stderr verbatim; a Latin-1 byte there must not make the
        # report unparseable forever (the client would resend it in every RPC).
        body = body.decode("utf-8", errors="replace").encode("utf-8")
    first = _FIRST_ELEMENT_RE.search(body)
    if _DOCTYPE_RE.search(body, 0, first.start() if first else len(body)):
        raise ProtocolError("DOCTYPE is not allowed")
    if scrub_controls:
        body = body.translate(_SCRUB_TABLE)
    return body


def parse_document(
    body: bytes,
    *,
    root: str | tuple[str, ...],
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    scrub_controls: bool = False,
) -> etree._Element:
    """Parse a whole document whose root element must be ``root`` (or one of them).

    ``scrub_controls`` turns C0 control bytes (never legal in XML 1.0) into ``?`` and
    invalid UTF-8 into U+FFFD first: the BOINC client copies an app's stderr into the
    request verbatim, and the stock server tolerates such bytes, so a report must not
    fail on them.
    """
    data = _prepare(body, max_bytes, scrub_controls=scrub_controls)
    # Every element starts with "<", so a body with few of them cannot build a big tree:
    # it is parsed in one call and checked after (~2x faster than streaming, which checks
    # each element from Python). Anything the fast path refuses goes through the stream,
    # so errors read the same whichever path met them first.
    if data.count(b"<") <= max_elements:
        document = _parse_whole(data, root, max_depth)
        if document is not None:
            return document
    stream = _Stream(root, max_depth, max_elements)
    try:
        stream.feed(data)
        document = stream.parser.close()
    except ProtocolError:
        raise
    except _XML_ERRORS as exc:
        raise ProtocolError(f"malformed XML: {exc}") from None
    if stream.root is None or document is None:
        raise ProtocolError("empty XML document")
    return document


_local = threading.local()


def _whole_parser() -> etree.XMLParser:
    """This thread's one-shot parser, with the same hardening as ``make_parser``
    (lxml parsers must not be shared between threads)."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = etree.XMLParser(**_HARDENED)
    return parser


@functools.cache
def _too_deep(max_depth: int) -> etree.XPath:
    """True for a document with an element below ``max_depth`` levels (the root is level 1)."""
    return etree.XPath("boolean(/*" + "/*" * max_depth + ")")


def _parse_whole(data: bytes, root: str | tuple[str, ...], max_depth: int) -> etree._Element | None:
    """The document if it passes every check of ``_Stream`` in one parse, else None."""
    try:
        document = etree.fromstring(data, _whole_parser())
    except _XML_ERRORS:
        return None
    docinfo = document.getroottree().docinfo
    roots = (root,) if isinstance(root, str) else root
    if (
        docinfo.internalDTD is not None
        or docinfo.system_url
        or docinfo.public_id
        or document.tag not in roots
        or _too_deep(max_depth)(document)
    ):
        return None
    return document


def parse_prefix(
    body: bytes,
    *,
    root: str,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> etree._Element:
    """Parse the start of a document that is never closed (the upload header).

    Elements closed within ``body`` are complete in the returned tree; the root and any
    other open element are partial. Malformed input is refused as in ``parse_document``.
    """
    data = _prepare(body, max_bytes, scrub_controls=False)
    stream = _Stream(root, max_depth, max_elements)
    try:
        stream.feed(data)
    except ProtocolError:
        raise
    except _XML_ERRORS as exc:
        raise ProtocolError(f"malformed XML: {exc}") from None
    if stream.root is None:
        raise ProtocolError(f"no <{root}> element")
    return stream.root


def parse_fragment(raw: str, *, max_bytes: int = MAX_FRAGMENT_BYTES) -> etree._Element:
    """Parse XML content (text and elements, no root) into a ``<fragment>`` element.

    Used for the raw blocks a message carries (preferences, trickle bodies) so that they
    are embedded as elements, never pasted in as text.
    """
    if not isinstance(raw, str):
        raise ProtocolError("XML fragment must be a string")
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        raise ProtocolError("XML fragment is not valid Unicode") from None
    return parse_document(b"<fragment>" + encoded + b"</fragment>", root="fragment", max_bytes=max_bytes)


def xml_fragment_problem(raw: str) -> str | None:
    """Why ``raw`` cannot be sent as XML content (preferences and the like), or None.

    For text stored outside the protocol (an account's preferences edited in the admin)
    that a reply must carry: checked before writing, so one bad value cannot break a reply.
    """
    try:
        parse_fragment(raw)
    except ProtocolError as exc:
        return str(exc)
    return None


def child_elements(element: etree._Element) -> Iterator[etree._Element]:
    """Element children only (no entity references or other node kinds)."""
    return element.iterchildren(etree.Element)  # lxml filters out other node kinds in C


def leaf_text(element: etree._Element) -> str:
    """All text inside an element (a leaf normally has only ``.text``)."""
    if not len(element):  # no children at all, not even entity references: just .text
        return element.text or ""
    return "".join(text for text in element.itertext() if isinstance(text, str))


def inner_xml(element: etree._Element, *, skip: frozenset[str] = frozenset()) -> str:
    """The content of ``element`` as XML text: its text, children and their tails.

    Children whose tag is in ``skip`` are left out (their tails are kept).
    """
    holder = etree.Element("w")
    holder.text = element.text
    previous: etree._Element | None = None
    for child in element:
        if isinstance(child.tag, str) and child.tag in skip:
            tail = child.tail or ""
            if previous is None:
                holder.text = (holder.text or "") + tail
            else:
                previous.tail = (previous.tail or "") + tail
            continue
        previous = copy.deepcopy(child)
        holder.append(previous)
    text = etree.tostring(holder, encoding="unicode", with_tail=False)
    return "" if text == "<w/>" else text[len("<w>") : -len("</w>")]
