"""Public JSON of the volunteer pages: users, hosts and teams, sorted like the top lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Model, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.applications.models import AppVersion
from apps.core.api.schema import NOT_FOUND
from apps.hosts.models import Host
from apps.portal import volunteer_selectors as sel
from apps.portal.api.serializers import HostSerializer, TeamSerializer, UserSerializer
from apps.projects.models import Project
from apps.volunteers.models import Account, Team

_SORT_BY = OpenApiParameter(
    "sort_by",
    OpenApiTypes.STR,
    enum=["total", "total_credit", "recent"],
    description="total (or total_credit) for total credit; recent average credit otherwise",
)

# Typed by hand: the lookup regex below, not the model, is what drf-spectacular would read.
_ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH)


def _public_schema(serializer: type[serializers.Serializer]) -> Callable[[type], type]:
    """The list and detail operations, with the 404 of an unknown project, record or page."""
    return extend_schema_view(
        list=extend_schema(parameters=[_SORT_BY], responses={200: serializer(many=True), 404: NOT_FOUND}),
        retrieve=extend_schema(parameters=[_ID], responses={200: serializer, 404: NOT_FOUND}),
    )


class _PublicReadOnly(viewsets.ReadOnlyModelViewSet):
    """?sort_by=total for total credit; recent average credit otherwise (as the pages)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []
    # Not the router's [^/.]+: an id such as "1.5" gets this API's JSON 404, not the
    # project pages' HTML one.
    lookup_value_regex = "[^/]+"
    selector: Callable[[Project, str], QuerySet[Any]] = staticmethod(sel.top_accounts)
    model: type[Model] = Account

    def get_queryset(self) -> QuerySet[Any]:
        if getattr(self, "swagger_fake_view", False):
            # Schema generation has no project: the model alone types the schema's parameters.
            return self.model._default_manager.none()
        project = get_object_or_404(Project, slug=self.kwargs["slug"])
        order = "total" if self.request.query_params.get("sort_by") in ("total", "total_credit") else "recent"
        return self.selector(project, order)


@_public_schema(UserSerializer)
class UserViewSet(_PublicReadOnly):
    serializer_class = UserSerializer
    selector = staticmethod(sel.top_accounts)
    model = Account


@_public_schema(HostSerializer)
class HostViewSet(_PublicReadOnly):
    serializer_class = HostSerializer
    selector = staticmethod(sel.top_hosts)
    model = Host


_NAME = OpenApiParameter(
    "name", OpenApiTypes.STR, description="Teams whose name contains this (any case), as team_lookup.php"
)


@extend_schema_view(
    list=extend_schema(
        parameters=[_SORT_BY, _NAME], responses={200: TeamSerializer(many=True), 404: NOT_FOUND}
    ),
    retrieve=extend_schema(parameters=[_ID], responses={200: TeamSerializer, 404: NOT_FOUND}),
)
class TeamViewSet(_PublicReadOnly):
    serializer_class = TeamSerializer
    selector = staticmethod(sel.top_teams)
    model = Team

    def get_queryset(self) -> QuerySet[Any]:
        teams = super().get_queryset()
        name = (self.request.query_params.get("name") or "").replace("\x00", "").strip()
        return teams.filter(name__icontains=name) if name else teams

    @extend_schema(parameters=[_ID], responses={200: UserSerializer(many=True), 404: NOT_FOUND})
    @action(detail=True)
    def members(self, request: Request, slug: str, pk: str) -> Response:
        """The team's members by recent average credit, as team_display.php lists them."""
        team = self.get_object()
        page = self.paginate_queryset(team.members.select_related("team").order_by("-expavg_credit", "id"))
        return self.get_paginated_response(UserSerializer(page, many=True).data)


class AppVersionBriefSerializer(serializers.Serializer):
    platform = serializers.CharField(source="platform.name")
    platform_name = serializers.SerializerMethodField(help_text="The platform's user-friendly name")
    version_num = serializers.IntegerField()
    plan_class = serializers.CharField()
    create_time = serializers.DateTimeField()
    beta = serializers.BooleanField()

    def get_platform_name(self, version: AppVersion) -> str:
        return version.platform.user_friendly_name or version.platform.name


class AppBriefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    user_friendly_name = serializers.CharField()
    beta = serializers.BooleanField()
    versions = AppVersionBriefSerializer(many=True)


class AppsView(APIView):
    """apps.php?xml=1 as JSON: the project's applications, each with its newest version per
    platform and plan class."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses={200: AppBriefSerializer(many=True), 404: NOT_FOUND})
    def get(self, request: Request, slug: str) -> Response:
        project = get_object_or_404(Project, slug=slug)
        rows = [
            {
                "id": app.id,
                "name": app.name,
                "user_friendly_name": app.user_friendly_name or app.name,
                "beta": app.beta,
                "versions": versions,
            }
            for app, versions in sel.apps_current_versions(project)
        ]
        return Response(AppBriefSerializer(rows, many=True).data)
