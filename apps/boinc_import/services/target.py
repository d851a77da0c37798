"""Writing many rows into Cobblestone's tables fast, and keeping id sequences ahead of them.

The import inserts rows with explicit ids (kept or shifted BOINC ids), which database
sequences do not see: PostgreSQL's identity sequence would later hand out an id already
taken. So a table's id range is reserved (the sequence moved past it) before the first
row goes in. SQLite's AUTOINCREMENT counter (sqlite_sequence) is moved the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, models
from django.db.models import Max


@dataclass(frozen=True, slots=True)
class _Column:
    attname: str
    field: models.Field
    convert: bool  # the value goes through the field's own conversion first


@functools.cache
def _insert_plan(
    model: type[models.Model], given: frozenset[str], vendor: str
) -> tuple[str, tuple[_Column, ...]]:
    """The COPY (PostgreSQL) or INSERT statement for every concrete column but an id that
    is not given, and how each column's value is prepared."""
    meta, quote = model._meta, connection.ops.quote_name
    columns = []
    for f in meta.concrete_fields:
        if f.primary_key and f.attname not in given:
            continue
        # JSON goes as JSON text; SQLite stores datetimes as text in Django's layout.
        convert = isinstance(f, models.JSONField) or (
            vendor != "postgresql" and isinstance(f, models.DateTimeField)
        )
        columns.append(_Column(f.attname, f, convert))
    names = ", ".join(quote(c.field.column) for c in columns)
    if vendor == "postgresql":
        return f"COPY {quote(meta.db_table)} ({names}) FROM STDIN", tuple(columns)
    marks = ", ".join(["%s"] * len(columns))
    return f"INSERT INTO {quote(meta.db_table)} ({names}) VALUES ({marks})", tuple(columns)


def rows_insert(model: type[models.Model], rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` ({attname: value}; every row has the same keys). Columns a row does
    not name get the field's default.

    PostgreSQL gets one COPY, several times faster than INSERTs of the same rows; other
    databases one executemany. No model instances and no auto_now values: the import sets
    every column itself (creation times come from BOINC).
    """
    if not rows:
        return
    sql, columns = _insert_plan(model, frozenset(rows[0]), connection.vendor)
    defaults = {c.attname: c.field.get_default() for c in columns if c.attname not in rows[0]}
    values = []
    for row in rows:
        line = []
        for c in columns:
            value = row[c.attname] if c.attname in row else defaults[c.attname]
            if c.convert and value is not None:
                value = c.field.get_db_prep_save(value, connection)
            line.append(value)
        values.append(line)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(sql) as copy:
                for line in values:
                    copy.write_row(line)
            return
        cursor.executemany(sql, values)


def id_range_taken(model: type[models.Model], lo: int, hi: int) -> bool:
    return model._default_manager.filter(pk__gte=lo, pk__lte=hi).exists()


def next_free_id(model: type[models.Model]) -> int:
    """The first id above every id the table holds or its sequence has handed out."""
    highest = model._default_manager.aggregate(top=Max("pk"))["top"] or 0
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT last_value, is_called FROM {_pg_sequence(cursor, table)}")
            last, called = cursor.fetchone()
            handed_out = last if called else last - 1
        else:
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
            row = cursor.fetchone()
            handed_out = row[0] if row else 0
    return max(highest, handed_out) + 1


def sequence_reserve(model: type[models.Model], last_id: int) -> None:
    """Move the table's id sequence to at least ``last_id``: new rows get higher ids."""
    if last_id <= 0:
        return
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sequence = _pg_sequence(cursor, table)
            cursor.execute(
                f"SELECT setval(%s, GREATEST(%s, (SELECT last_value FROM {sequence})))", [sequence, last_id]
            )
            return
        cursor.execute("UPDATE sqlite_sequence SET seq = MAX(seq, %s) WHERE name = %s", [last_id, table])
        if cursor.rowcount == 0:
            cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, last_id])


def _pg_sequence(cursor: Any, table: str) -> str:
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    return str(cursor.fetchone()[0])
