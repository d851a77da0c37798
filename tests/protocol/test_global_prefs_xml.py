"""Global (computing) preferences with venues: the body the web writes and clients read."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.protocol import ProtocolError, global_prefs_parse, prefs_mod_time
from apps.protocol.global_prefs import (
    VENUES,
    ComputingPrefs,
    GlobalPrefsDoc,
    parse_global_prefs,
    render_global_prefs,
)


def _value(f):
    if f.type in ("bool", bool):
        return st.booleans()
    return st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)


prefs_sets = st.builds(ComputingPrefs, **{f.name: _value(f) for f in fields(ComputingPrefs)})
docs = st.builds(
    GlobalPrefsDoc,
    mod_time=st.integers(min_value=0, max_value=2**33).map(float),
    primary=prefs_sets,
    venues=st.lists(st.sampled_from(VENUES), unique=True)
    .map(lambda names: [v for v in VENUES if v in names])
    .flatmap(lambda names: st.tuples(*(st.tuples(st.just(n), prefs_sets) for n in names))),
)


@given(docs)
def test_a_written_body_reads_back_to_the_same_preferences(doc):
    assert parse_global_prefs(render_global_prefs(doc)) == doc


def test_the_scheduler_reads_the_written_mod_time_and_cpu_share():
    doc = GlobalPrefsDoc(mod_time=1_800_000_000, primary=ComputingPrefs(max_ncpus_pct=40))
    body = render_global_prefs(doc)
    assert prefs_mod_time(body) == 1_800_000_000
    assert global_prefs_parse(body).max_ncpus_pct == 40


def test_a_venue_is_written_with_its_name_and_a_whole_set():
    doc = GlobalPrefsDoc().with_venue("work", ComputingPrefs(cpu_usage_limit=30))
    body = render_global_prefs(doc)
    assert '<venue name="work">' in body
    assert body.count("<cpu_usage_limit>") == 2
    assert parse_global_prefs(body).for_venue("work").cpu_usage_limit == 30
    assert parse_global_prefs(body).for_venue("home").cpu_usage_limit == 100


def test_a_clients_printf_values_and_flags_are_read():
    body = (
        "<mod_time>1700000000.000000</mod_time><max_ncpus_pct>75.000000</max_ncpus_pct>"
        "<run_on_batteries/><leave_apps_in_memory>0</leave_apps_in_memory>"
    )
    prefs = parse_global_prefs(body)
    assert prefs.mod_time == 1_700_000_000
    assert prefs.primary.max_ncpus_pct == 75
    assert prefs.primary.run_on_batteries is True
    assert prefs.primary.leave_apps_in_memory is False


def test_a_whole_document_with_its_root_reads_as_its_body():
    assert parse_global_prefs(
        "<global_preferences><max_ncpus_pct>20</max_ncpus_pct></global_preferences>"
    ).primary == ComputingPrefs(max_ncpus_pct=20)


def test_unknown_tags_are_ignored_and_a_bad_number_keeps_the_default():
    prefs = parse_global_prefs(
        "<day_prefs><day_of_week>1</day_of_week></day_prefs><disk_interval>soon</disk_interval>"
    )
    assert prefs.primary == ComputingPrefs()


def test_a_venue_without_a_name_is_home_and_an_unknown_venue_is_dropped():
    prefs = parse_global_prefs(
        "<venue><max_ncpus_pct>10</max_ncpus_pct></venue>"
        '<venue name="garage"><max_ncpus_pct>5</max_ncpus_pct></venue>'
    )
    assert [name for name, _ in prefs.venues] == ["home"]
    assert prefs.for_venue("home").max_ncpus_pct == 10


def test_a_body_that_is_not_xml_is_refused():
    with pytest.raises(ProtocolError):
        parse_global_prefs("<max_ncpus_pct>10")


def test_only_boincs_three_venues_can_be_set():
    with pytest.raises(ProtocolError, match="unknown venue"):
        GlobalPrefsDoc().with_venue("garage", ComputingPrefs())


def test_removing_a_venue_keeps_the_others_in_order():
    doc = GlobalPrefsDoc()
    for name in ("work", "home", "school"):
        doc = doc.with_venue(name, ComputingPrefs())
    assert [n for n, _ in doc.with_venue("home", None).venues] == ["school", "work"]
