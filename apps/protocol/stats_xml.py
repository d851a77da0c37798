"""Volunteer statistics as BOINC writes them: show_user-style records and db_dump files.

A record is an ordered list of (tag, value) pairs so the element order matches BOINC's
(third-party statistics sites parse these files). Numbers are written in plain decimal;
``True`` becomes an empty flag element and ``None``/``False`` is left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from apps.protocol.xmlwrite import Block, flat_element, new_document, serialize

Value = str | int | float | bool | None
_IN = " "


@dataclass(frozen=True, slots=True)
class Record:
    """One <user>, <host> or <team>: its tag, its fields in order, nested records, and the
    fields BOINC writes after the nested ones."""

    tag: str
    fields: tuple[tuple[str, Value], ...]
    children: tuple[Record, ...] = ()
    after: tuple[tuple[str, Value], ...] = ()


def _text(value: int | float | str) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return "0"
        return f"{value:.6f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return str(value)


def _fields(block: Block, fields: Iterable[tuple[str, Value]], indent: str) -> None:
    for tag, value in fields:
        if value is None or value is False:
            continue
        if value is True:
            block.flag(tag, indent)
        else:
            block.leaf(tag, _text(value), indent)


def _write(block: Block, record: Record, indent: str) -> None:
    with block.block(record.tag, indent) as inner:
        _fields(inner, record.fields, indent + _IN)
        for child in record.children:
            _write(inner, child, indent + _IN)
        _fields(inner, record.after, indent + _IN)


def render_record(record: Record) -> bytes:
    """A single record as a document (show_user.php?format=xml and friends)."""
    doc = new_document(record.tag)
    _fields(doc, record.fields, _IN)
    for child in record.children:
        _write(doc, child, _IN)
    _fields(doc, record.after, _IN)
    return serialize(doc)


def _flat_children(fields: Iterable[tuple[str, Value]]) -> Iterator[tuple[str, str | Literal[True]]]:
    for tag, value in fields:
        if value is None or value is False:
            continue
        yield tag, value if value is True else _text(value)


def render_dump_record(record: Record) -> str:
    """``render_record(record)`` as text without its final line break; records without
    nested ones (every db_dump record) are written without building a document."""
    if record.children or record.after:
        return render_record(record).decode("utf-8").rstrip("\n")
    return flat_element(record.tag, _flat_children(record.fields))


def render_dump(root_tag: str, records: Iterable[Record]) -> bytes:
    """A db_dump file body: ``<users>`` / ``<hosts>`` / ``<teams>`` holding the records."""
    doc = new_document(root_tag)
    for record in records:
        _write(doc, record, "")
    return serialize(doc)


def render_tables(fields: Sequence[tuple[str, Value]]) -> bytes:
    """db_dump's tables.xml: update time and totals."""
    return render_record(Record("tables", tuple(fields)))
