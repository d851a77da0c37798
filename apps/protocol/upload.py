"""The file_upload_handler protocol (docs/protocol.md): request headers, size queries, replies.

An upload body is an XML header that is never closed, then ``<data>\\n``, then raw file
bytes. The caller streams the body, finds the end of the header in a bounded prefix with
``find_upload_header_end`` and passes the bytes up to and including ``<data>\\n`` to
``parse_upload_header``; the file content starts at ``UploadRequest.data_offset``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

from lxml import etree

from apps.protocol import numbers as num
from apps.protocol.errors import ProtocolError
from apps.protocol.filenames import is_safe_file_name
from apps.protocol.xmlsafe import child_elements, leaf_text, parse_document, parse_prefix
from apps.protocol.xmlwrite import Block, new_document, serialize

MAX_UPLOAD_HEADER_BYTES = 64 * 1024
DATA_MARKER = b"<data>\n"
_MAX_FILE_BYTES = 1e15
_IN = "    "


class UploadStatus(IntEnum):
    OK = 0
    TRANSIENT = 1  # the client retries later
    PERMANENT = -1  # the upload fails; the result is reported with an upload error


@dataclass(frozen=True, slots=True)
class ClientVersion:
    major: int = 0
    minor: int = 0
    release: int = 0


@dataclass(frozen=True, slots=True)
class UploadRequest:
    """The header of a ``<file_upload>``; ``name`` is already checked with is_safe_file_name."""

    name: str
    max_nbytes: int
    nbytes: int
    md5_cksum: str
    offset: int
    xml_signature: str
    data_offset: int  # index in the body where the file bytes start
    client_version: ClientVersion = ClientVersion()


@dataclass(frozen=True, slots=True)
class FileSizeQuery:
    """``<get_file_size>NAME</get_file_size>``: how many bytes of NAME are stored?"""

    name: str
    client_version: ClientVersion = ClientVersion()


@dataclass(frozen=True, slots=True)
class UploadReply:
    status: int
    message: str | None = None
    file_size: int | None = None


def upload_certificate_text(name: str, max_nbytes: float) -> str:
    """The exact text an upload certificate (``xml_signature``) signs.

    ``<name>NAME</name><max_nbytes>M</max_nbytes>``, M printed as an integer the way the
    stock server's ``%.0f`` does. NAME is not escaped (names are safe file names).
    """
    if not math.isfinite(max_nbytes) or max_nbytes < 0:
        raise ProtocolError("max_nbytes must be a finite non-negative number")
    return f"<name>{name}</name><max_nbytes>{max_nbytes:.0f}</max_nbytes>"


def find_upload_header_end(prefix: bytes, *, max_header_bytes: int = MAX_UPLOAD_HEADER_BYTES) -> int | None:
    """Index just past ``<data>\\n`` in ``prefix``, or None if more bytes are needed.

    Raises ProtocolError once ``max_header_bytes`` bytes have been seen without it.
    """
    index = prefix.find(DATA_MARKER, 0, max_header_bytes)
    if index >= 0 and index + len(DATA_MARKER) <= max_header_bytes:
        return index + len(DATA_MARKER)
    if len(prefix) >= max_header_bytes:
        raise ProtocolError(f"no <data> within the first {max_header_bytes} bytes of the upload")
    return None


def parse_upload_header(
    prefix: bytes, *, max_header_bytes: int = MAX_UPLOAD_HEADER_BYTES
) -> UploadRequest | FileSizeQuery:
    """Parse an upload header (up to and including ``<data>\\n``) or a whole size query.

    A header with an unsafe file name (see ``is_safe_file_name``) is refused.
    """
    end = find_upload_header_end(prefix[:max_header_bytes], max_header_bytes=max_header_bytes)
    if end is None:
        root = parse_document(prefix, root="data_server_request", max_bytes=max_header_bytes)
        query = _child(root, "get_file_size")
        if query is None:
            raise ProtocolError("upload request has neither <data> nor <get_file_size>")
        return FileSizeQuery(_safe_name(leaf_text(query)), _client_version(root))
    header = parse_prefix(
        prefix[: end - len(DATA_MARKER)], root="data_server_request", max_bytes=max_header_bytes
    )
    upload = _child(header, "file_upload")
    info = None if upload is None else _child(upload, "file_info")
    if upload is None or info is None:
        raise ProtocolError("upload header has no <file_upload><file_info>")
    name_element = _child(info, "name")
    nbytes = _number(upload, "nbytes", required=True)
    offset = _number(upload, "offset", required=False)
    if offset > nbytes:
        raise ProtocolError("upload offset is past the end of the file")
    signature = _child(info, "xml_signature")
    md5 = _child(upload, "md5_cksum")
    return UploadRequest(
        name=_safe_name("" if name_element is None else leaf_text(name_element)),
        max_nbytes=_number(info, "max_nbytes", required=True),
        nbytes=nbytes,
        md5_cksum="" if md5 is None else leaf_text(md5).strip(),
        offset=offset,
        xml_signature="" if signature is None else leaf_text(signature).strip(),
        data_offset=end,
        client_version=_client_version(header),
    )


def _child(element: etree._Element, tag: str) -> etree._Element | None:
    found = [c for c in child_elements(element) if c.tag == tag]
    return found[-1] if found else None


def _safe_name(text: str) -> str:
    name = text.strip()
    if not is_safe_file_name(name):
        raise ProtocolError(f"unsafe file name {name[:80]!r}")
    return name


def _number(element: etree._Element, tag: str, *, required: bool) -> int:
    child = _child(element, tag)
    if child is None or not leaf_text(child).strip():
        if required:
            raise ProtocolError(f"upload header: <{tag}> is required")
        return 0
    value = num.parse_float(leaf_text(child), tag)
    # The client prints sizes with %.0f; a fractional size is truncated like atoi would.
    return int(num.check_float(value, tag, 0.0, _MAX_FILE_BYTES))


def _client_version(root: etree._Element) -> ClientVersion:
    parts = []
    for tag in ("core_client_major_version", "core_client_minor_version", "core_client_release"):
        child = _child(root, tag)
        text = "" if child is None else leaf_text(child)
        parts.append(num.check_int(num.parse_int(text, tag), tag, 0, 100_000) if text.strip() else 0)
    return ClientVersion(*parts)


def render_upload_reply(status: int, message: str | None = None, file_size: int | None = None) -> bytes:
    """``<data_server_reply>``: status 0 ok, 1 transient, -1 permanent; optional size/message."""
    doc = new_document("data_server_reply")
    doc.leaf("status", num.format_int(int(status)), _IN)
    if file_size is not None:
        if file_size < 0:
            raise ProtocolError("file_size must not be negative")
        doc.leaf("file_size", num.format_int(file_size), _IN)
    if message is not None:
        doc.leaf("message", message, _IN)
    return serialize(doc)


def parse_upload_reply(body: bytes, *, max_bytes: int = MAX_UPLOAD_HEADER_BYTES) -> UploadReply:
    """Client side: a missing status counts as transient, as the client treats it."""
    root = parse_document(body, root="data_server_reply", max_bytes=max_bytes)
    status = _child(root, "status")
    size = _child(root, "file_size")
    message = _child(root, "message")
    return UploadReply(
        status=UploadStatus.TRANSIENT if status is None else num.parse_int(leaf_text(status), "status"),
        message=None if message is None else leaf_text(message).strip(),
        file_size=None if size is None else _number(root, "file_size", required=True),
    )


def render_upload_header(request: UploadRequest) -> bytes:
    """Client side: the header bytes 7.20.5 sends before the file data (ends in ``<data>\\n``).

    The elements stay open, as on the wire, so this cannot go through a tree serializer;
    it is built from a closed tree by cutting at the ``<data>`` element.
    """
    doc = new_document("data_server_request")
    _render_version(doc, request.client_version)
    with doc.block("file_upload") as upload:
        with upload.block("file_info") as info:
            info.leaf("name", request.name)
            info.leaf("xml_signature", "\n" + request.xml_signature)
            info.leaf("max_nbytes", num.format_int(request.max_nbytes))
        upload.leaf("nbytes", num.format_int(request.nbytes))
        upload.leaf("md5_cksum", request.md5_cksum)
        upload.leaf("offset", num.format_int(request.offset))
        upload.leaf("data", "")
    closed = serialize(doc)
    return closed[: closed.index(b"<data></data>")] + DATA_MARKER


def render_file_size_query(name: str, client_version: ClientVersion = ClientVersion()) -> bytes:
    doc = new_document("data_server_request")
    _render_version(doc, client_version)
    doc.leaf("get_file_size", name, _IN)
    return serialize(doc)


def _render_version(doc: Block, version: ClientVersion) -> None:
    doc.leaf("core_client_major_version", str(version.major), _IN)
    doc.leaf("core_client_minor_version", str(version.minor), _IN)
    doc.leaf("core_client_release", str(version.release), _IN)
