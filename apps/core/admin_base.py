"""Admin pieces shared by several apps."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

# Larger numbers are no id of a BIGINT column; they are searched as names only.
_MAX_ID = 2**63 - 1


class RecordAdmin(admin.ModelAdmin):
    """Rows the system writes (records of what happened): admins read and may delete them,
    never add or edit them."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _term_id(term: str) -> int | None:
    """The term as a row id, or None when it is no number a BIGINT column could hold."""
    term = term.strip()
    # isdigit() alone admits '²' and other digits int() refuses.
    return int(term) if term.isascii() and term.isdigit() and int(term) <= _MAX_ID else None


def indexed_search(
    queryset: QuerySet[Any],
    term: str,
    *,
    names: Iterable[str] = ("name",),
    numbers: Iterable[str] = ("id",),
    project_ids: Sequence[int] | None = None,
    also: Q | None = None,
) -> QuerySet[Any]:
    """Rows whose name is exactly ``term``, or (for a number) whose id fields equal it.

    The search of tables of millions of rows (results, workunits, output files): a substring
    search reads the whole table on every search; each of these conditions reads an index.
    With ``project_ids`` the names are matched per project so that a (project, name) unique
    index serves them. ``also`` is one more condition, which must be indexed as well.
    """
    term = term.strip()
    if not term:
        return queryset
    query = Q()
    for field in names:
        match = Q(**{field: term})
        if project_ids is not None:
            match &= Q(project_id__in=list(project_ids))
        query |= match
    number = _term_id(term)
    if number is not None:
        for field in numbers:
            query |= Q(**{field: number})
    if also is not None:
        query |= also
    return queryset.filter(query)
