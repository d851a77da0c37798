"""OpenAPI pieces every DRF view of the project shares: its error answers, and a schema class.

Kept apart from the package itself: drf-spectacular imports DRF's settings, which import the
parser in ``apps.core.api``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.pagination import BasePagination

# The error bodies the API answers with, for the OpenAPI schema: DRF's own errors carry
# {"detail": ...}, the project's refusals {"error": ...}, validation {field: [messages]}.
_DETAIL = inline_serializer("Detail", {"detail": serializers.CharField()})
ERROR = inline_serializer("Error", {"error": serializers.CharField()})

BAD_REQUEST = OpenApiResponse(
    OpenApiTypes.OBJECT, description='Bad input: {field: [messages]}, {"detail": ...} or {"error": ...}'
)
NOT_FOUND = OpenApiResponse(_DETAIL, description="No such project, record or page")
FORBIDDEN = OpenApiResponse(_DETAIL, description="Not logged in as an admin user")
CONFLICT = OpenApiResponse(ERROR, description="The record is not in a state that allows this")


class UnpaginatedCreateSchema(AutoSchema):
    """drf-spectacular's schema for a viewset whose create answers a plain list: DRF filters
    and paginates only the list action, but drf-spectacular would wrap any many=True
    response in a page and give the operation ?page= and the filters."""

    def _is_list_action(self) -> bool:
        return getattr(self.view, "action", None) == "list"

    def get_filter_backends(self) -> list[Any]:
        return super().get_filter_backends() if self._is_list_action() else []

    def _get_paginator(self) -> BasePagination | None:
        return super()._get_paginator() if self._is_list_action() else None
