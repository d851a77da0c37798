"""The import's hand-written SQL on Cobblestone's side: named statements that write the
imported rows and keep the id sequences ahead of them.

Why SQL: an import writes millions of rows, and ``bench_import`` (docs/benchmarks.md) times
it. Rows go in by one COPY per batch on PostgreSQL, several times faster than INSERTs of the
same rows and far faster than building model instances for ``bulk_create``; the links made
once both ends are in (team founders, canonical results) are one UPDATE per pair with its
condition, nothing read first. Reading BOINC's own MySQL database is a foreign schema the
ORM has no models for: that SQL stays beside the import steps that read it
(``services/source.py``, and each step's ``TableQuery`` and ``run.source.rows`` calls).

The import inserts rows with explicit ids (kept or shifted BOINC ids), which database
sequences do not see: PostgreSQL's identity sequence would later hand out an id already
taken. So a table's id range is reserved (the sequence moved past it) before the first
row goes in. SQLite's AUTOINCREMENT counter (sqlite_sequence) is moved the same way.
Neither sequence has an ORM API.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, models

from apps.core.db import execute_many

# Pairs per executemany call: a batch's worth, so one call's parameters stay small.
_PAIRS_PER_CALL = 5000


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


def sequence_handed_out(model: type[models.Model]) -> int:
    """The highest id the table's sequence has handed out (0 if none).

    Why SQL: PostgreSQL's sequence and SQLite's sqlite_sequence have no ORM API.
    """
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"SELECT last_value, is_called FROM {_pg_sequence(cursor, table)}")
            last, called = cursor.fetchone()
            return int(last if called else last - 1)
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        row = cursor.fetchone()
        return int(row[0]) if row else 0


def sequence_reserve(model: type[models.Model], last_id: int) -> None:
    """Move the table's id sequence to at least ``last_id``: new rows get higher ids.

    Why SQL: as ``sequence_handed_out``, no ORM API for a sequence.
    """
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


def team_founders_set(pairs: Sequence[tuple[int, int]]) -> None:
    """For each (account id, team id): that account founded the team, unless the team has a
    founder already.

    Why SQL: one UPDATE per pair with its condition, nothing read first; the ORM would load
    each team or run a filtered ``update()`` per pair, at a compile each.
    """
    for start in range(0, len(pairs), _PAIRS_PER_CALL):
        execute_many(
            "UPDATE volunteers_team SET founder_id = %s WHERE id = %s AND founder_id IS NULL",
            pairs[start : start + _PAIRS_PER_CALL],
        )


def canonical_results_set(pairs: Sequence[tuple[int, int]]) -> None:
    """For each (workunit id, result id): the workunit's canonical result is that result,
    if the workunit has none yet and the result was imported.

    Why SQL: as ``team_founders_set``; the ORM's ``filter(Exists(...)).update()`` per pair
    says the same at a compile each.
    """
    for start in range(0, len(pairs), _PAIRS_PER_CALL):
        execute_many(
            "UPDATE work_workunit SET canonical_result_id = %s WHERE id = %s AND canonical_result_id IS NULL"
            " AND EXISTS (SELECT 1 FROM work_result WHERE id = %s)",
            [(result_id, wu_id, result_id) for wu_id, result_id in pairs[start : start + _PAIRS_PER_CALL]],
        )


def _pg_sequence(cursor: Any, table: str) -> str:
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    return str(cursor.fetchone()[0])
