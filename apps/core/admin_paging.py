"""Admin changelists that do not count every row of a large table on each page view.

Django's changelist pages with ``Paginator.count``, an exact ``COUNT(*)`` over the whole
(filtered) table: at millions of rows that scan costs more than the page itself. Here:

* an unfiltered list of a PostgreSQL table the planner knows to be large is counted from
  the planner's own estimate (``pg_class.reltuples``, kept by ANALYZE and autovacuum), so
  the count is close, not exact;
* any other list is counted exactly up to ``COUNT_CAP`` rows, and shows ``COUNT_CAP + 1``
  when there are more (the page links stop there; the filters and the search narrow it).

``show_full_result_count = False`` spares the second count Django makes of the unfiltered
table beside a filtered one.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.contrib import admin
from django.db import connections
from django.db.models import QuerySet

from apps.core.paging import KeysFirstPaginator

# Below this many rows an exact count is cheap and the estimate's error would show.
ESTIMATE_FROM = 100_000
COUNT_CAP = 10_000


def estimated_rows(queryset: QuerySet[Any]) -> int | None:
    """The planner's row estimate of the queryset's table if the queryset reads the whole
    table and the database is PostgreSQL; else None."""
    query = queryset.query
    if queryset.model is None or query.where or query.distinct or query.combinator or query.is_sliced:
        return None
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        # Hand-written: the estimate lives in the catalogue, which the ORM does not model.
        cursor.execute(
            "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [queryset.model._meta.db_table]
        )
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] >= 0 else None  # -1: never analyzed


class EstimatedCountPaginator(KeysFirstPaginator):
    """The changelist's paginator: estimated or capped counts (module doc), and pages that
    read their ids first, so a page reached by number does not join every row above it."""

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if not isinstance(queryset, QuerySet):
            return super().count
        estimate = estimated_rows(queryset)
        if estimate is not None and estimate >= ESTIMATE_FROM:
            return estimate
        return queryset.order_by()[: COUNT_CAP + 1].count()


class LargeTableAdmin(admin.ModelAdmin):
    """A ModelAdmin for a table that grows with the project's history (results, hosts…)."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False
