"""Operators' JSON of a volunteer's computing preferences (prefs.php): the primary set, each
venue's own set and when they were last set. Staff with the view permission on accounts."""

from __future__ import annotations

from dataclasses import asdict

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.schema import FORBIDDEN, NOT_FOUND
from apps.scheduler.services.prefs import account_global_prefs_get
from apps.volunteers.models import Account


class GlobalPrefsView(APIView):
    queryset = Account.objects.all()  # the model OperatorPermission checks

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 403: FORBIDDEN, 404: NOT_FOUND})
    def get(self, request: Request, slug: str, pk: int) -> Response:
        account = get_object_or_404(Account, project__slug=slug, pk=pk)
        doc = account_global_prefs_get(account)
        return Response(
            {
                "mod_time": doc.mod_time,
                "default_venue": account.venue,
                "primary": asdict(doc.primary),
                "venues": {name: asdict(prefs) for name, prefs in doc.venues},
            }
        )
