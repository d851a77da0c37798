"""The API's list pagination: BOINC-sized tables are not counted row by row on each request.

``count`` is the admin's estimated count (``apps.core.admin_paging``): the planner's estimate
for a big unfiltered table, else an exact count up to a cap. The pages themselves do not
depend on it: a page is served while it has rows, and ``next`` is given when a row follows.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import EmptyPage, Page
from rest_framework.pagination import PageNumberPagination

from apps.core.admin_paging import EstimatedCountPaginator


class _OpenEndedPage(Page):
    def __init__(self, object_list: Any, number: int, paginator: Any, more: bool) -> None:
        super().__init__(object_list, number, paginator)
        self.more = more

    def has_next(self) -> bool:
        return self.more


class _OpenEndedPaginator(EstimatedCountPaginator):
    def page(self, number: Any) -> Page:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        # One row more than the page tells whether another page follows, without a count.
        rows = list(self.object_list[bottom : bottom + self.per_page + 1])
        if not rows and number > 1:
            raise EmptyPage("That page contains no results")
        return _OpenEndedPage(rows[: self.per_page], number, self, len(rows) > self.per_page)

    def validate_number(self, number: Any) -> int:
        # Any page from 1 on: the count may be an estimate or capped below the last row.
        try:
            value = int(number)
        except (TypeError, ValueError):
            raise EmptyPage("That page number is not an integer") from None
        if value < 1:
            raise EmptyPage("That page number is less than 1")
        return value


class EstimatedCountPagination(PageNumberPagination):
    """PageNumberPagination whose ``count`` is estimated or capped (module doc)."""

    django_paginator_class = _OpenEndedPaginator

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        response = super().get_paginated_response_schema(schema)
        response["properties"]["count"]["description"] = (
            "The number of rows: the database's estimate for a large unfiltered list, else "
            "exact up to 10,000 (10,001 meaning more). Follow `next` to the end rather than "
            "computing pages from it."
        )
        return response
