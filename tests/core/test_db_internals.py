"""The Django internals apps.core.db relies on, pinned: each test names what the hot path
assumes, so a Django upgrade that changes it fails here rather than in a wrong row."""

import inspect

import pytest
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models.base import Model, ModelState
from django.db.models.signals import post_init, pre_init

from apps.core.db import ModelColumns, fetch_rows, statement_cursor
from apps.hosts.models import Host
from apps.work.models import Result, Workunit
from tests.factories import HostFactory

pytestmark = pytest.mark.django_db


def test_from_db_takes_alias_field_names_and_values() -> None:
    # ModelColumns.build falls back to from_db(alias, names or None, values) when signals listen.
    assert list(inspect.signature(Model.from_db).parameters) == ["db", "field_names", "values"]


def test_a_loaded_instance_holds_only_its_state_and_attnames_in_its_dict() -> None:
    # ModelColumns.build skips Model.__init__ and fills __dict__ with exactly these keys.
    host = HostFactory()
    loaded = Host.objects.get(pk=host.pk)
    assert set(loaded.__dict__) == {"_state", *(f.attname for f in Host._meta.concrete_fields)}


def test_model_state_is_plain_adding_and_db() -> None:
    state = ModelState()
    state.adding, state.db = False, DEFAULT_DB_ALIAS
    assert (state.adding, state.db) == (False, DEFAULT_DB_ALIAS)
    assert state.fields_cache == {}  # created on first use, so a bare ModelState is complete


def test_built_instance_equals_the_orm_instance_field_for_field() -> None:
    host = HostFactory()
    cols = ModelColumns(Host, "h")
    (row,) = fetch_rows(f"SELECT {cols.sql()} FROM hosts_host h WHERE h.id = %s", [host.pk])
    built, loaded = cols.build(row), Host.objects.get(pk=host.pk)
    assert built.__dict__.keys() == loaded.__dict__.keys()
    assert {k: v for k, v in built.__dict__.items() if k != "_state"} == {
        k: v for k, v in loaded.__dict__.items() if k != "_state"
    }
    assert (built._state.adding, built._state.db) == (loaded._state.adding, loaded._state.db)


def test_init_signals_expose_has_listeners() -> None:
    # ModelColumns.build uses Model.__init__ only while a pre_init or post_init receiver listens.
    assert pre_init.has_listeners(Host) in (True, False)
    assert post_init.has_listeners(Host) in (True, False)


def test_field_options_read_by_the_hot_path_exist() -> None:
    meta = Workunit._meta
    assert meta.db_table
    assert meta.pk is not None
    assert meta.pk.column
    assert all(isinstance(f, models.Field) for f in meta.concrete_fields)
    fk = Result._meta.get_field("workunit")
    assert isinstance(fk, models.ForeignKey)
    assert fk.target_field is Workunit._meta.pk
    assert callable(fk.set_cached_value)  # results_with_workunits caches the workunit with it
    conn = connections[DEFAULT_DB_ALIAS]
    assert isinstance(meta.pk.rel_db_type(conn), str)  # type: ignore[attr-defined]
    assert isinstance(meta.get_field("transition_time").db_type(conn), str)


def test_field_converters_come_from_the_column_and_the_backend() -> None:
    conn = connections[DEFAULT_DB_ALIAS]
    col = Workunit._meta.get_field("transition_time").get_col("w")
    assert isinstance(conn.ops.get_db_converters(col), list)
    assert isinstance(col.get_db_converters(conn), list)


def test_connection_wrapper_members_the_kept_cursor_uses() -> None:
    conn = connections[DEFAULT_DB_ALIAS]
    for name in ("close_if_health_check_failed", "is_usable", "cursor"):
        assert callable(getattr(conn, name)), name
    assert isinstance(conn.queries_logged, bool)
    assert isinstance(conn.in_atomic_block, bool)
    with statement_cursor():
        assert conn.connection is not None  # the raw DB-API connection the kept cursor is tied to


def test_the_kept_cursor_lives_on_the_connection_wrapper() -> None:
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.queries_logged:
        pytest.skip("statements are being logged: each gets Django's debug cursor")
    with statement_cursor() as first:
        pass
    with statement_cursor() as second:
        pass
    assert first is second
    assert conn._cobblestone_cursor[1] is first  # type: ignore[attr-defined]
