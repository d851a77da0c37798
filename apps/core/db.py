"""Hot-path database helpers the ORM has no cheap equivalent for."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, models


def update_rows(model: type[models.Model], rows: Sequence[models.Model], fields: Sequence[str]) -> None:
    """``UPDATE table SET f=… WHERE id=…`` for each row, as one prepared statement.

    Django's ``bulk_update`` builds a CASE expression per field and per row, which costs far
    more Python time than the SQL; a loop of ``.update()`` calls pays the ORM for each row.
    ``executemany`` sends one statement with many parameter sets (pipelined by psycopg 3).
    Values go through each field's own conversion, so dates, booleans and JSON are stored
    as the ORM would store them.
    """
    if not rows:
        return
    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(f.column)} = %s" for f in columns)
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(meta.pk.column)} = %s"
    params = [
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in columns] + [row.pk] for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


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
