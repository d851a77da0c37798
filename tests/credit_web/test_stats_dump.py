"""The streamed db_dump writer gives render_dump's bytes (pure)."""

from __future__ import annotations

from apps.protocol.stats_dump import dump_chunks
from apps.protocol.stats_xml import Record, render_dump

RECORDS = [
    Record("user", (("id", 1), ("name", "Ada <&>"), ("total_credit", 12.5), ("url", None), ("flag", True))),
    Record("user", (("id", 2), ("name", "Bob")), (Record("host", (("id", 9),)),)),
]


def test_streamed_dump_equals_the_whole_document():
    assert b"".join(dump_chunks("users", RECORDS)) == render_dump("users", RECORDS)


def test_empty_dump_equals_the_whole_document():
    assert b"".join(dump_chunks("teams", [])) == render_dump("teams", [])


def test_records_are_pulled_one_at_a_time():
    pulled = []

    def records():
        for r in RECORDS:
            pulled.append(r)
            yield r

    chunks = dump_chunks("users", records())
    next(chunks)
    next(chunks)
    assert len(pulled) == 1
