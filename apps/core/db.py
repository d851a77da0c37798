"""Hot-path database helpers the ORM has no cheap equivalent for."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any, cast

from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.utils import CursorWrapper
from django.db.models.base import ModelState
from django.db.models.indexes import IndexExpression
from django.db.models.options import Options
from django.db.models.signals import post_init, pre_init


def update_rows(
    model: type[models.Model],
    rows: Sequence[models.Model],
    fields: Sequence[str],
    *,
    batch: WriteBatch | None = None,
) -> None:
    """``UPDATE table SET f=… WHERE id=…`` for each row, in one statement on PostgreSQL.

    Django's ``bulk_update`` builds a CASE expression per field and per row, which costs far
    more Python time than the SQL; a loop of ``.update()`` calls pays the ORM for each row.
    On PostgreSQL the rows travel as one array per column and ``unnest`` joins them to the
    table: one statement of one shape, whatever the number of rows, so it is prepared once
    and the server does one round of parse, plan and trigger set-up instead of one per row.
    Elsewhere ``executemany`` sends one statement with many parameter sets. Values go through
    each field's own conversion (but plain ints, floats and strings, which it would return
    unchanged: see _PLAIN_TYPES), so dates, enums and JSON are stored as the ORM would.
    With ``batch`` the statement waits in it until ``batch.flush()``.
    """
    if not rows:
        return
    conn = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: the proxy costs a lookup per use
    columns = _prep_plan(model, tuple(fields), conn.vendor)
    params = [
        [
            value
            if type(value) is plain or (plain is _AwareDatetime and type(value) is datetime and value.tzinfo)
            else f.get_db_prep_save(value, conn)
            for f, plain in columns
            for value in (getattr(row, f.attname),)
        ]
        + [row.pk]
        for row in rows
    ]
    target = batch if batch is not None else WriteBatch()
    table, keys = model._meta.db_table, frozenset(row.pk for row in rows)
    if len(params) > 1 and connection.vendor == "postgresql":
        sql = _unnest_update_sql(model, tuple(fields))
        target.add(sql, [array_literal(col) for col in zip(*params, strict=True)], table=table, keys=keys)
    elif len(params) == 1:  # executemany costs more for one row
        target.add(_update_sql(model, tuple(fields), connection.vendor), params[0], table=table, keys=keys)
    else:
        target.add_many(_update_sql(model, tuple(fields), connection.vendor), params)
    if batch is None:
        target.flush()


class WriteBatch:
    """Writes whose effects nothing reads before ``flush()``, sent together then.

    The scheduler RPC writes the host, its reports, their output files, the results it
    sends, the host_app_version counters and the workunits' transition times: a statement
    and a round trip each, with the server and PostgreSQL both paying per statement. On
    PostgreSQL a flush sends them as one statement, each write a data-modifying WITH query,
    so one parse, bind and execute and one round trip. Other databases run them in order.

    PostgreSQL applies only one of two writes of the same row within one statement, so a
    write to a table an earlier write of the same flush touches, on rows that may overlap
    (``keys`` unknown or shared), starts a new statement. Callers flush before anything
    in the transaction reads what the batch holds.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        # (sql, params, table, keys or None, many)
        self._items: list[tuple[str, Any, str, frozenset[Any] | None, bool]] = []

    def __len__(self) -> int:
        return len(self._items)

    def add(self, sql: str, params: Sequence[Any], *, table: str, keys: frozenset[Any] | None = None) -> None:
        """One statement (an UPDATE or INSERT without RETURNING) on ``table``; ``keys``: the
        primary keys it writes, when known."""
        self._items.append((sql, params, table, keys, False))

    def add_many(self, sql: str, param_sets: Sequence[Sequence[Any]]) -> None:
        """One statement run once per parameter set (never combined with others)."""
        self._items.append((sql, param_sets, "", None, True))

    def flush(self) -> None:
        """Run everything the batch holds, in order, and empty it."""
        items, self._items = self._items, []
        if not items:
            return
        with statement_cursor() as cursor:
            if connection.vendor != "postgresql":
                for sql, params, _table, _keys, many in items:
                    (cursor.executemany if many else cursor.execute)(sql, params)
                return
            for group in _statement_groups(items):
                if len(group) == 1:
                    sql, params, _table, _keys, many = group[0]
                    (cursor.executemany if many else cursor.execute)(sql, params)
                    continue
                heads = ", ".join(f"w{i} AS ({sql})" for i, (sql, *_rest) in enumerate(group[:-1]))
                cursor.execute(
                    f"WITH {heads} {group[-1][0]}",
                    [value for _sql, params, *_rest in group for value in params],
                )


def _statement_groups(items: list[tuple[str, Any, str, frozenset[Any] | None, bool]]) -> list[list[Any]]:
    """Consecutive runs of ``items`` that one statement can carry (see WriteBatch)."""
    groups: list[list[Any]] = []
    current: list[Any] = []
    written: dict[str, frozenset[Any] | None] = {}
    for item in items:
        _sql, _params, table, keys, many = item
        clash = many or (
            table in written
            and (keys is None or (seen := written[table]) is None or not keys.isdisjoint(seen))
        )
        if clash and current:
            groups.append(current)
            current, written = [], {}
        current.append(item)
        if many:
            groups.append(current)
            current, written = [], {}
        else:
            previous = written.get(table, frozenset())
            written[table] = None if keys is None or previous is None else previous | keys
    if current:
        groups.append(current)
    return groups


# Fields whose conversion for the database returns a value of this exact type unchanged
# (int() of an int, str of a str...): update_rows skips the call for such values, which
# cost ~5 us each, a few hundred times per RPC. Anything else (None, enums, dates, JSON)
# goes through the field as the ORM would send it.
_PLAIN_TYPES: dict[type, type] = {
    models.IntegerField: int,
    models.BigIntegerField: int,
    models.SmallIntegerField: int,
    models.PositiveIntegerField: int,
    models.PositiveBigIntegerField: int,
    models.PositiveSmallIntegerField: int,
    models.FloatField: float,
    models.CharField: str,
    models.TextField: str,
    models.BooleanField: bool,
}


class _AwareDatetime:
    """Marks a DateTimeField on PostgreSQL: Django returns an aware datetime unchanged there
    (a naive one is made aware first, and SQLite gets a string, so those are converted)."""


@functools.cache
def _prep_plan(
    model: type[models.Model], fields: tuple[str, ...], vendor: str
) -> tuple[tuple[Any, type | None], ...]:
    """Each field with the value type it passes through unchanged (None: always convert)."""
    plan = []
    for name in fields:
        f = model._meta.get_field(name)
        target = f.target_field if isinstance(f, models.ForeignKey) else f
        plain = _PLAIN_TYPES.get(type(target))
        if plain is None and type(target) is models.DateTimeField and vendor == "postgresql":
            plain = _AwareDatetime
        plan.append((f, plain))
    return tuple(plan)


@contextmanager
def statement_cursor() -> Iterator[CursorWrapper]:
    """A cursor for one hot-path statement, kept for the next one on the same connection.

    Opening a cursor costs ~50 us in Django and psycopg, as much as running a prepared
    statement; the RPC runs a dozen. The kept cursor belongs to this thread's connection
    and is replaced when Django reconnects. While statements are being logged (DEBUG, or
    a test capturing them) each gets Django's own debug cursor, so every one is recorded.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    # What Django's cursor() does first: with CONN_HEALTH_CHECKS, a kept connection is
    # checked once per request or task, so one a database restart killed is replaced.
    conn.close_if_health_check_failed()
    raw = conn.connection
    if raw is None or conn.queries_logged:
        with conn.cursor() as cursor:
            yield cursor
        return
    kept = getattr(conn, "_cobblestone_cursor", None)
    if kept is None or kept[0] is not raw:
        kept = (raw, conn.cursor())
        conn._cobblestone_cursor = kept  # type: ignore[attr-defined]  # kept on the connection itself
    yield kept[1]


def _column(meta: Options[Any], name: str) -> models.Field[Any, Any]:
    """``get_field`` for a name that is always a concrete column here."""
    return cast("models.Field[Any, Any]", meta.get_field(name))


@functools.cache
def _update_sql(model: type[models.Model], fields: tuple[str, ...], vendor: str) -> str:
    meta, quote = model._meta, connection.ops.quote_name
    assignments = ", ".join(f"{quote(_column(meta, name).column)} = %s" for name in fields)
    return f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"


@functools.cache
def _unnest_update_sql(model: type[models.Model], fields: tuple[str, ...]) -> str:
    meta, quote = model._meta, connection.ops.quote_name
    columns = [_column(meta, name) for name in fields]
    arrays = ", ".join(f"%s::{f.db_type(connection)}[]" for f in columns)
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    assignments = ", ".join(f"{quote(f.column)} = v.c{i}" for i, f in enumerate(columns))
    table, pk = quote(meta.db_table), quote(meta.pk.column)
    return (
        f"UPDATE {table} SET {assignments} FROM unnest({arrays}, %s::{meta.pk.rel_db_type(connection)}[]) "  # type: ignore[attr-defined]  # not in the stubs
        f"AS v({names}, pk) WHERE {table}.{pk} = v.pk"
    )


def analyze_tables(*models_: type[models.Model]) -> None:
    """Refresh the planner's statistics for these tables after a bulk load.

    Until autovacuum gets to a freshly loaded table, PostgreSQL plans with no statistics
    and picks sequential scans for the scheduler's indexed lookups (measured: the dispatch
    query went from 17 ms to 0.3 ms once analyzed). SQLite's ANALYZE feeds its planner too.
    """
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in models_:
            cursor.execute(f"ANALYZE {quote(model._meta.db_table)}")


class ModelColumns:
    """A model's columns in a hand-written SELECT, and its slice of each row as a model.

    The scheduler RPC runs a dozen queries whose shape never changes; building each one
    through the ORM costs about 1 ms of Python against 0.1 ms for the SQL. This gives the
    hand-written SQL the ORM's result: the same column list, the same per-field
    conversions (SQLite's datetimes and booleans, JSON), the same model instances.

    ``fields`` (names, in any order) selects some columns; the rest are deferred and load
    on first access, as with ``.only()``.
    """

    def __init__(self, model: type[models.Model], alias: str, fields: Sequence[str] | None = None) -> None:
        concrete = model._meta.concrete_fields
        wanted = None if fields is None else {_column(model._meta, name).attname for name in fields}
        self.model = model
        self.alias = alias
        self.fields = tuple(f for f in concrete if wanted is None or f.attname in wanted)
        self.width = len(self.fields)
        self.names = [f.attname for f in self.fields]
        self._partial = wanted is not None
        self._plain: bool | None = None
        self._converters: dict[str, list[tuple[int, list[Any], Any]]] = {}
        self._sql: dict[str, str] = {}

    def sql(self) -> str:
        vendor = connection.vendor
        found = self._sql.get(vendor)
        if found is None:
            quote = connection.ops.quote_name
            found = self._sql[vendor] = ", ".join(
                f"{quote(self.alias)}.{quote(f.column)}" for f in self.fields
            )
        return found

    def _converters_for(self, conn: Any) -> list[tuple[int, list[Any], Any]]:
        found = self._converters.get(conn.vendor)
        if found is None:
            found = []
            for i, f in enumerate(self.fields):
                col = f.get_col(self.alias)
                funcs = conn.ops.get_db_converters(col) + col.get_db_converters(conn)
                if funcs:
                    found.append((i, funcs, col))
            self._converters[conn.vendor] = found
        return found

    def build(self, row: Sequence[Any], start: int = 0, conn: Any = None) -> Any:
        """The model instance for ``row[start:start + width]``; ``conn``: the default
        database's wrapper, when the caller has it (the lookup costs ~2 us a row)."""
        if conn is None:
            conn = connections[DEFAULT_DB_ALIAS]
        values = list(row[start : start + self.width])
        for i, funcs, col in self._converters_for(conn):
            value = values[i]
            for func in funcs:
                value = func(value, col, conn)
            values[i] = value
        if self._plain is None:
            # Model.__init__ costs ~30 us a row in setattr calls; what it does for a plain
            # row from the database is fill __dict__ and _state, which is done directly here
            # unless something listens to the model's init signals.
            self._plain = not (pre_init.has_listeners(self.model) or post_init.has_listeners(self.model))
        if not self._plain:
            return self.model.from_db(conn.alias, self.names if self._partial else None, values)  # type: ignore[arg-type]  # Django takes None: all fields
        obj = self.model.__new__(self.model)
        state = ModelState()
        state.adding, state.db = False, conn.alias
        attrs = obj.__dict__
        attrs["_state"] = state
        attrs.update(zip(self.names, values, strict=True))
        return obj


def use_generic_plans() -> None:
    """For the rest of this transaction, run prepared statements on their generic plans.

    PostgreSQL plans a prepared statement again on every execution whenever its generic
    plan looks costlier than the plans made for the values given: for the scheduler RPC's
    statements that was a fifth of the database's time, for plans no faster. They are
    keyed lookups and windows on the unsent-results index, which the generic plan finds
    as well. The setting lasts until the outermost transaction ends, so daemons with range
    conditions keep PostgreSQL's choice; other databases have nothing to change.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.vendor == "postgresql":
        if not conn.in_atomic_block:
            raise RuntimeError("use_generic_plans() outside a transaction would last for the session")
        execute("SET LOCAL plan_cache_mode = force_generic_plan")


def connection_lost() -> bool:
    """After a statement failed: whether the database connection is gone (the server restarted,
    the backend was terminated, the network dropped) or could not be opened.

    Outside a transaction a dead connection is closed here, so the next statement opens a
    new one: Django replaces it only between requests and tasks, and a daemon's pass would
    otherwise fail every statement until it ends, the database back or not.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.connection is None:
        return True
    if conn.is_usable():
        return False
    if not conn.in_atomic_block:
        conn.close()
    return True


def advisory_xact_lock(name: str) -> None:
    """Wait for, then hold until the transaction ends, PostgreSQL's advisory lock ``name``.

    For rules row locks cannot enforce, such as one result per user per workunit across the
    user's hosts. Other databases have one writer at a time: nothing to do.
    """
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.vendor == "postgresql":
        if not conn.in_atomic_block:
            raise RuntimeError("advisory_xact_lock() outside a transaction would not be held")
        fetch_rows("SELECT pg_advisory_xact_lock(%s)", [advisory_key(name)])


@contextmanager
def session_advisory_lock(name: str) -> Iterator[bool]:
    """Hold PostgreSQL's session advisory lock ``name`` for the block if no other session
    does: yields whether it is held. Other databases have one writer at a time: always held.

    PostgreSQL's lock functions have no ORM equivalent.
    """
    if connection.vendor != "postgresql":
        yield True
        return
    key = advisory_key(name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        row = cursor.fetchone()
        held = bool(row and row[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [key])


def advisory_key(name: str) -> int:
    """The 64-bit key PostgreSQL's advisory lock functions take, for a lock's name."""
    return int.from_bytes(hashlib.sha1(name.encode()).digest()[:8], "big", signed=True)


def quoted_table(model: type[models.Model]) -> str:
    """The model's table, quoted for hand-written SQL."""
    return connection.ops.quote_name(model._meta.db_table)


_DATETIME: models.DateTimeField = models.DateTimeField()


def db_datetime(value: datetime | None) -> Any:
    """A datetime as the ORM would send it (SQLite stores text); None stays NULL."""
    return None if value is None else _DATETIME.get_db_prep_save(value, connection)


def fetch_rows(sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row of one query, through Django's cursor (so query logging and wrappers see it)."""
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def execute(sql: str, params: Sequence[Any] = ()) -> int:
    """Run one statement; the number of rows it changed."""
    with statement_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def execute_many(sql: str, param_sets: Sequence[Sequence[Any]]) -> None:
    """Run one statement once per parameter set."""
    with statement_cursor() as cursor:
        cursor.executemany(sql, param_sets)


def array_literal(values: Sequence[Any]) -> str | list[Any]:
    """``values`` as PostgreSQL's text form of an array, for a ``%s::type[]`` parameter.

    psycopg dumps a list element by element in Python, working out each one's type: about
    5 us an element, measured as a sixth of the scheduler's CPU (an RPC sends ~300 in its
    arrays). The text form is built here for the types the hot path sends (None, bool,
    int, float, str, date and datetime) at a tenth of that; PostgreSQL's cast parses it.
    Anything else returns the list, which psycopg dumps as before.
    """
    parts = []
    for value in values:
        kind = type(value)
        if value is None:
            parts.append("NULL")
        elif kind is int or kind is float:
            parts.append(repr(value))
        elif kind is str:
            # Inside double quotes only the backslash and the double quote are special.
            if "\\" in value or '"' in value:
                value = value.replace("\\", "\\\\").replace('"', '\\"')
            parts.append(f'"{value}"')
        elif kind is bool:
            parts.append("t" if value else "f")
        elif kind is datetime or kind is date:
            parts.append(f'"{value.isoformat()}"')
        else:
            return list(values)
    return "{" + ",".join(parts) + "}"


def placeholders(values: Sequence[Any]) -> str:
    """``%s, %s, ...`` for an IN list (never empty: callers check first)."""
    return ", ".join(["%s"] * len(values))


def any_of(column: str, values: Sequence[Any], sql_type: str) -> tuple[str, list[Any]]:
    """``column`` is one of ``values``: the SQL and its parameters.

    On PostgreSQL ``column = ANY(%s::type[])`` with the list as one array: one statement
    whatever the list's length, so it is prepared and planned once per connection. An IN
    list makes a statement per length (dozens for a host's task list), each planned
    again, and some lengths drew plans 15 times slower than the others (measured). Elsewhere an
    IN list. ``values`` is never empty (callers check first).
    """
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s::{sql_type}[])", [array_literal(values)]
    return f"{column} IN ({placeholders(values)})", list(values)


class PrefixSearchable(models.Func):
    """An index expression that PostgreSQL can use for ``LIKE 'prefix%'`` (Django's
    ``istartswith`` on ``Upper(column)``) whatever the database's collation: the
    ``text_pattern_ops`` operator class. Other databases index the bare expression."""

    template = "%(expressions)s text_pattern_ops"
    constraint_validation_compatible = False

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        return compiler.compile(self.source_expressions[0])


# An operator class follows the parenthesized expression in CREATE INDEX, as
# django.contrib.postgres arranges for its OpClass (an app this project does not install).
IndexExpression.register_wrappers(*IndexExpression.wrapper_classes, cast(Any, PrefixSearchable))
