"""db_dump records written without a document per record give render_record's bytes (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.protocol.errors import ProtocolError
from apps.protocol.stats_xml import Record, render_dump_record, render_record
from tests.protocol.test_xmlwrite import xml_text

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    xml_text,
)
fields = st.lists(
    st.tuples(st.sampled_from(["id", "name", "total_credit", "url", "x_y"]), values), max_size=8
)


@given(st.sampled_from(["user", "host", "team"]), fields)
def test_flat_record_has_render_records_bytes(tag, pairs):
    record = Record(tag, tuple(pairs))
    assert render_dump_record(record).encode() == render_record(record).rstrip(b"\n")


def test_nested_record_has_render_records_bytes():
    record = Record("user", (("id", 1),), (Record("host", (("id", 2),)),), (("country", "Fr"),))
    assert render_dump_record(record).encode() == render_record(record).rstrip(b"\n")


def test_text_xml_cannot_carry_is_refused():
    with pytest.raises(ProtocolError):
        render_dump_record(Record("user", (("name", "bell\x07"),)))
