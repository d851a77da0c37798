"""Public JSON face of the app-version scale export (cross-project normalization)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core import clock
from apps.core.api.schema import NOT_FOUND
from apps.credit.selectors import app_version_scales_export
from apps.projects.models import Project
from apps.protocol.scales_xml import scales_to_json


class AppVersionScalesView(APIView):
    """Per app version: app name, platform, plan class, recent average credit, scale factor,
    is_gpu and project (cross-project normalization, docs/credit.md). Public, like BOINC's other statistics exports."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 404: NOT_FOUND})
    def get(self, request: Request, slug: str) -> Response:
        project = get_object_or_404(Project, slug=slug)
        return Response(scales_to_json(app_version_scales_export(project=project, now=clock.now())))
