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
    what the first one does. ``limit`` pages only the list's first rows.
    """

    def __init__(
        self,
        object_list: Any,
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
        *,
        limit: int | None = None,
    ) -> None:
        self._rows = object_list
        if limit is not None:
            object_list = object_list[:limit]
        super().__init__(object_list, per_page, orphans, allow_empty_first_page)

    def page(self, number: Any) -> Page:
        if not isinstance(self._rows, QuerySet):
            return super().page(number)
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        ids = list(self._rows.values_list("pk", flat=True)[bottom:top])
        by_id: dict[Any, Model] = {row.pk: row for row in self._rows.filter(pk__in=ids)}
        return Page([by_id[pk] for pk in ids if pk in by_id], number, self)
