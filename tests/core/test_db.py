"""Hand-written hot-path SQL gives back what the ORM would (apps.core.db)."""

from datetime import UTC, date, datetime, timedelta, timezone
from enum import IntEnum
from zoneinfo import ZoneInfo

import pytest
from django.db import connection, transaction
from django.db.models import DEFERRED
from django.db.models.signals import post_init
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.core.db import (
    ModelColumns,
    WriteBatch,
    any_of,
    array_literal,
    execute,
    fetch_rows,
    statement_cursor,
    update_rows,
    use_generic_plans,
)
from apps.hosts.models import Host
from apps.projects.models import Project
from tests.factories import HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def field_values(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_a_row_builds_the_same_instance_as_the_orm():
    host = HostFactory(
        rpc_time=datetime(2026, 5, 1, 12, 30, tzinfo=UTC), last_rpc_day=date(2026, 5, 1), blacklisted=True
    )
    columns = ModelColumns(Host, "h")
    row = fetch_rows(f"SELECT {columns.sql()} FROM hosts_host h WHERE h.id = %s", [host.id])[0]
    built = columns.build(row)
    assert field_values(built) == field_values(Host.objects.get(id=host.id))
    assert built.rpc_time == datetime(2026, 5, 1, 12, 30, tzinfo=UTC)  # aware, as the ORM gives
    assert built.blacklisted is True


def test_json_columns_come_back_decoded():
    project = ProjectFactory(paused_daemons=["validator", "feeder"])
    columns = ModelColumns(Project, "p")
    row = fetch_rows(f"SELECT {columns.sql()} FROM projects_project p WHERE p.id = %s", [project.id])[0]
    assert columns.build(row).paused_daemons == ["validator", "feeder"]


def test_a_partial_column_list_defers_the_rest():
    host = HostFactory(domain_name="alpha")
    columns = ModelColumns(Host, "h", ["id", "domain_name"])
    row = fetch_rows(f"SELECT {columns.sql()} FROM hosts_host h WHERE h.id = %s", [host.id])[0]
    built = columns.build(row)
    assert built.domain_name == "alpha"
    assert "p_ncpus" in built.get_deferred_fields()
    assert built.__dict__.get("p_ncpus", DEFERRED) is DEFERRED


def test_update_rows_writes_each_row_and_only_the_named_fields():
    a, b = HostFactory(domain_name="a", p_ncpus=2), HostFactory(domain_name="b", p_ncpus=2)
    a.domain_name, b.domain_name, a.p_ncpus = "a2", "b2", 16
    update_rows(Host, [a, b], ["domain_name"])
    assert list(
        Host.objects.filter(id__in=[a.id, b.id]).order_by("id").values_list("domain_name", "p_ncpus")
    ) == [
        ("a2", 2),
        ("b2", 2),
    ]


def test_a_model_with_init_listeners_is_built_through_its_init():
    host = HostFactory()
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance.id)

    post_init.connect(listener, sender=Host)
    try:
        columns = ModelColumns(Host, "h")
        row = fetch_rows(f"SELECT {columns.sql()} FROM hosts_host h WHERE h.id = %s", [host.id])[0]
        built = columns.build(row)
    finally:
        post_init.disconnect(listener, sender=Host)
    assert seen == [host.id]
    assert built.domain_name == host.domain_name


def test_update_rows_stores_every_kind_of_column_as_the_orm_does():
    # Dates, floats, booleans, text, nulls and foreign keys over several rows: on
    # PostgreSQL they travel as one array per column.
    hosts = [HostFactory(domain_name=f"h{i}") for i in range(3)]
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    for i, host in enumerate(hosts):
        host.rpc_time = when if i else None
        host.p_fpops = 1.5e9 * (i + 1)
        host.p_ncpus = 4 + i
        host.domain_name = f"renamed-{i}"
        host.last_rpc_day = date(2026, 3, 4 + i)
    fields = ["rpc_time", "p_fpops", "p_ncpus", "domain_name", "last_rpc_day"]
    update_rows(Host, hosts, fields)
    for host in hosts:
        stored = Host.objects.get(id=host.id)
        assert {f: getattr(stored, f) for f in fields} == {f: getattr(host, f) for f in fields}


@pytest.mark.filterwarnings("ignore:DateTimeField .* received a naive datetime")
def test_update_rows_stores_aware_and_naive_datetimes_as_the_orm_does():
    # Aware datetimes skip Django's conversion on PostgreSQL; a naive one must still be
    # made aware in the default time zone, as save() does.
    aware, naive = HostFactory(), HostFactory()
    aware.rpc_time = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=timezone(timedelta(hours=2)))
    naive.rpc_time = datetime(2026, 3, 4, 5, 6, 7)
    with override_settings(TIME_ZONE="Europe/Paris"):  # not the database session's UTC
        update_rows(Host, [aware, naive], ["rpc_time"])
    assert Host.objects.get(id=aware.id).rpc_time == aware.rpc_time
    assert Host.objects.get(id=naive.id).rpc_time == datetime(
        2026, 3, 4, 5, 6, 7, tzinfo=ZoneInfo("Europe/Paris")
    )


def test_update_rows_stores_json_values():
    projects = [ProjectFactory(), ProjectFactory()]
    projects[0].paused_daemons = ["feeder", "validator"]
    projects[1].paused_daemons = []
    update_rows(Project, projects, ["paused_daemons"])
    assert [Project.objects.get(id=p.id).paused_daemons for p in projects] == [["feeder", "validator"], []]


class Cores(IntEnum):
    EIGHT = 8


def test_update_rows_converts_enums_and_ints_in_float_columns():
    # An int in a float column beside a float (one array per column on PostgreSQL), and
    # an enum in an integer column, are stored as the ORM stores them.
    a, b = HostFactory(), HostFactory()
    a.p_fpops, b.p_fpops = 3, 2.5e9
    a.p_ncpus = b.p_ncpus = Cores.EIGHT
    update_rows(Host, [a, b], ["p_fpops", "p_ncpus"])
    stored = list(Host.objects.filter(id__in=[a.id, b.id]).order_by("id").values_list("p_fpops", "p_ncpus"))
    assert stored == [(3.0, 8), (2.5e9, 8)]


def test_hot_path_statements_share_one_cursor_on_a_connection():
    fetch_rows("SELECT 1")  # the connection is open
    with statement_cursor() as first, statement_cursor() as second:
        assert first is second


def test_a_new_connection_gets_a_new_cursor():
    fetch_rows("SELECT 1")
    with statement_cursor() as kept:
        pass
    connection._cobblestone_cursor = (object(), kept)  # as if Django had reconnected since
    with statement_cursor() as cursor:
        assert cursor is not kept
        cursor.execute("SELECT 2")
        assert cursor.fetchall() == [(2,)]


def test_statements_are_recorded_while_queries_are_captured():
    fetch_rows("SELECT 1")
    with CaptureQueriesContext(connection) as queries:
        fetch_rows("SELECT 3")
        execute("SELECT 4")
    assert [q["sql"] for q in queries.captured_queries] == ["SELECT 3", "SELECT 4"]


def test_any_of_matches_the_listed_values():
    hosts = [HostFactory(domain_name=f"any-{i}") for i in range(4)]
    named, params = any_of("h.domain_name", ["any-1", "any-3", "nobody"], "text")
    rows = fetch_rows(f"SELECT h.id FROM hosts_host h WHERE {named} ORDER BY h.id", params)
    assert [r[0] for r in rows] == [hosts[1].id, hosts[3].id]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="one array parameter on PostgreSQL only")
def test_any_of_is_one_statement_whatever_the_length_on_postgresql():
    short, _ = any_of("h.id", [1], "bigint")
    long, params = any_of("h.id", list(range(50)), "bigint")
    assert short == long
    assert len(params) == 1  # the whole list is one parameter


def test_a_write_batch_waits_for_its_flush():
    host = HostFactory(domain_name="before")
    host.domain_name = "after"
    batch = WriteBatch()
    update_rows(Host, [host], ["domain_name"], batch=batch)
    assert Host.objects.get(id=host.id).domain_name == "before"
    batch.flush()
    assert Host.objects.get(id=host.id).domain_name == "after"
    assert len(batch) == 0


def test_a_flush_applies_writes_to_several_tables():
    host = HostFactory(domain_name="h0")
    project = host.project
    host.domain_name, project.name = "h1", "renamed"
    batch = WriteBatch()
    update_rows(Host, [host], ["domain_name"], batch=batch)
    update_rows(Project, [project], ["name"], batch=batch)
    batch.flush()
    assert Host.objects.get(id=host.id).domain_name == "h1"
    assert Project.objects.get(id=project.id).name == "renamed"


def test_two_writes_of_one_row_in_a_flush_apply_in_order():
    host = HostFactory(domain_name="first", p_ncpus=1)
    batch = WriteBatch()
    host.domain_name = "second"
    update_rows(Host, [host], ["domain_name"], batch=batch)
    host.domain_name, host.p_ncpus = "third", 8
    update_rows(Host, [host], ["domain_name", "p_ncpus"], batch=batch)
    batch.flush()
    assert Host.objects.filter(id=host.id).values_list("domain_name", "p_ncpus").get() == ("third", 8)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="writes share a statement on PostgreSQL only")
def test_writes_to_different_tables_are_one_statement_on_postgresql():
    hosts = [HostFactory(), HostFactory()]
    project = hosts[0].project
    batch = WriteBatch()
    for host in hosts:
        host.domain_name = f"renamed-{host.id}"
    project.name = "renamed"
    update_rows(Host, hosts, ["domain_name"], batch=batch)
    update_rows(Project, [project], ["name"], batch=batch)
    with CaptureQueriesContext(connection) as queries:
        batch.flush()
    assert len(queries) == 1
    assert sorted(
        Host.objects.filter(id__in=[h.id for h in hosts]).values_list("domain_name", flat=True)
    ) == sorted(f"renamed-{h.id}" for h in hosts)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="writes share a statement on PostgreSQL only")
def test_writes_to_disjoint_rows_of_one_table_share_a_statement_and_overlapping_ones_do_not():
    a, b = HostFactory(domain_name="a"), HostFactory(domain_name="b")
    batch = WriteBatch()
    a.domain_name = "a1"
    update_rows(Host, [a], ["domain_name"], batch=batch)
    b.domain_name = "b1"
    update_rows(Host, [b], ["domain_name"], batch=batch)  # other row: same statement
    a.domain_name = "a2"
    update_rows(Host, [a], ["domain_name"], batch=batch)  # a again: a second statement
    with CaptureQueriesContext(connection) as queries:
        batch.flush()
    assert len(queries) == 2
    assert dict(Host.objects.filter(id__in=[a.id, b.id]).values_list("id", "domain_name")) == {
        a.id: "a2",
        b.id: "b1",
    }


postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's array text form")


@postgresql_only
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
        )
    )
)
def test_text_arrays_reach_postgresql_unchanged(values):
    assert fetch_rows("SELECT %s::text[]", [array_literal(values)])[0][0] == values


@postgresql_only
def test_arrays_of_numbers_dates_and_flags_reach_postgresql_unchanged():
    cases = [
        ([1, -2, 2**40, None], "bigint"),
        ([0.1, -1e300, 5e-324, 1 / 3, None], "double precision"),
        ([True, False, None], "boolean"),
        ([datetime(2026, 5, 1, 12, 30, 0, 123456, tzinfo=UTC), None], "timestamptz"),
        ([date(2026, 5, 1)], "date"),
        ([], "bigint"),
    ]
    for values, sql_type in cases:
        assert fetch_rows(f"SELECT %s::{sql_type}[]", [array_literal(values)])[0][0] == values


def test_values_of_other_types_are_left_to_the_driver():
    assert array_literal([1, b"x"]) == [1, b"x"]


def plan_cache_mode():
    return fetch_rows("SELECT current_setting('plan_cache_mode')")[0][0]


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_generic_plans_last_until_the_transaction_ends():
    with transaction.atomic():
        use_generic_plans()
        assert plan_cache_mode() == "force_generic_plan"
    assert plan_cache_mode() == "auto"


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_generic_plans_are_refused_outside_a_transaction():
    with pytest.raises(RuntimeError):
        use_generic_plans()
    assert plan_cache_mode() == "auto"
