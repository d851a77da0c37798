"""Pages of long ordered lists that read only their own rows."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Model, QuerySet


class KeysFirstPaginator(Paginator):
    """A page's ids are read first, then its rows with their joins.

    ``OFFSET n`` over whole rows reads (and joins) every row above the page: half way down
    a top list of 10,000 hosts that is 10,000 heap rows and account lookups. The ids alone
    come from the ordering's index without touching the table, so a deep page costs about
    what the first one does.
    """

    def __init__(self, queryset: QuerySet[Any], per_page: int, *, limit: int) -> None:
        super().__init__(queryset[:limit], per_page)
        self._rows = queryset

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = min(bottom + self.per_page, self.count)
        ids = list(self._rows.values_list("pk", flat=True)[bottom:top])
        by_id: dict[Any, Model] = {row.pk: row for row in self._rows.filter(pk__in=ids)}
        return Page([by_id[pk] for pk in ids if pk in by_id], number, self)
