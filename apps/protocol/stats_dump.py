"""db_dump files written record by record, so a project's whole user table is never in memory.

``render_dump`` (stats_xml) builds one tree for the whole file; this yields the same bytes
in pieces: the root's start tag, each record as ``render_record`` writes it, the end tag.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from apps.protocol.stats_xml import Record, render_dump_record
from apps.protocol.xmlwrite import new_document, serialize


def dump_chunks(root_tag: str, records: Iterable[Record]) -> Iterator[bytes]:
    """The bytes of ``render_dump(root_tag, records)``, one record at a time."""
    # lxml writes the root's tags: an empty root serialises as "<users>\n</users>\n".
    start, end = serialize(new_document(root_tag)).split(b"\n", 1)
    yield start
    for record in records:
        yield ("\n" + render_dump_record(record)).encode("utf-8")
    yield b"\n" + end
