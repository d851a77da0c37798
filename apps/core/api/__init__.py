"""Pieces every DRF view of the project shares: bad input is a JSON 400/404, never a 500."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.parsers import JSONParser
from rest_framework.permissions import DjangoModelPermissions

from apps.core.admin_base import staff_verified

_CONTROL = re.compile("[\x00-\x1f\x7f]")


class SafeJSONParser(JSONParser):
    """DRF's JSONParser, refusing JSON nested past Python's recursion limit with ParseError."""

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json's scanner recurses once per level, so '[' * 1000 exhausts the stack.
            raise ParseError("JSON parse error - nested too deeply") from None


class OperatorPermission(DjangoModelPermissions):
    """The operators' API: staff users, with the Django permission on the model that the
    admin would ask for the same act (a staff account given no permissions in the admin
    gets none here either). Reading needs view_*, creating add_*, and an action on one
    record (a sequence's extend, end, deassign) change_*."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
        "OPTIONS": ["%(app_label)s.view_%(model_name)s"],
    }

    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated and request.user.is_staff):
            return False
        if not staff_verified(request.user):
            return False  # COBBLESTONE_STAFF_OTP: only the admin's verified session
        if getattr(view, "detail", False) and request.method == "POST":
            model = self._queryset(view).model
            return request.user.has_perm(f"{model._meta.app_label}.change_{model._meta.model_name}")
        return super().has_permission(request, view)


class NameLookupMixin:
    """For viewsets looked up by name: a name no record can have (control characters,
    which PostgreSQL refuses to compare at all for NUL) is simply not found."""

    kwargs: dict[str, Any]
    lookup_field: str
    lookup_url_kwarg: str | None = None
    # The router's default, [^/.]+, leaves names with a dot ("job.1", which create_work
    # accepts) to the project pages' HTML 404.
    lookup_value_regex = "[^/]+"

    def get_object(self) -> Any:
        value = str(self.kwargs.get(self.lookup_url_kwarg or self.lookup_field, ""))
        if _CONTROL.search(value):
            raise NotFound()
        return super().get_object()  # type: ignore[misc]  # the view class supplies it


@csrf_exempt  # an API client sends no CSRF token: its mistyped POST gets this JSON too
def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any /api/ path no route matches: a JSON 404 (the project pages' HTML 404 would
    otherwise answer it, e.g. for a slug with characters no project slug has).

    Must stay the last api/ route. Since it matches everything under /api/, it also does
    CommonMiddleware's APPEND_SLASH: a GET of a route without its trailing slash is
    redirected to it."""
    path = request.path_info
    if settings.APPEND_SLASH and request.method in ("GET", "HEAD") and not path.endswith("/"):
        try:
            match = resolve(path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    return JsonResponse({"detail": "Not found."}, status=404)
