"""Operators' JSON API for trickle messages: list trickle-ups; list and create trickle-downs."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core import clock
from apps.core.api.schema import BAD_REQUEST, FORBIDDEN, NOT_FOUND
from apps.trickles.api.serializers import (
    MsgFromHostSerializer,
    MsgToHostSerializer,
    TrickleDownCreateSerializer,
)
from apps.trickles.models import MsgFromHost, MsgToHost
from apps.trickles.services import TrickleError, trickle_down_create
from apps.work.api.views import ProjectScopedMixin


@extend_schema_view(
    list=extend_schema(responses={200: MsgFromHostSerializer(many=True), 403: FORBIDDEN, 404: NOT_FOUND})
)
class TrickleUpViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Trickle-ups received from a project's hosts, newest first (``?handled=0`` for the
    unhandled ones, ``?host=ID``, ``?variety=V``)."""

    serializer_class = MsgFromHostSerializer
    filterset_fields = ["host", "variety", "handled"]

    def get_queryset(self) -> QuerySet[MsgFromHost]:
        return MsgFromHost.objects.filter(project__slug=self.kwargs.get("slug", "")).order_by("-id")


@extend_schema_view(
    list=extend_schema(responses={200: MsgToHostSerializer(many=True), 403: FORBIDDEN, 404: NOT_FOUND})
)
class TrickleDownViewSet(ProjectScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Trickle-downs of a project, newest first; POST one for a host's next reply."""

    serializer_class = MsgToHostSerializer
    filterset_fields = ["host", "variety", "delivered"]

    def get_queryset(self) -> QuerySet[MsgToHost]:
        return MsgToHost.objects.filter(project__slug=self.kwargs.get("slug", "")).order_by("-id")

    @extend_schema(
        request=TrickleDownCreateSerializer,
        responses={201: MsgToHostSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
    )
    def create(self, request: Request, slug: str) -> Response:
        project = self.project()
        data = TrickleDownCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            message = trickle_down_create(
                project=project,
                host_id=data.validated_data["host"],
                variety=data.validated_data["variety"],
                body=data.validated_data["xml"],
                result_name=data.validated_data["result_name"],
                now=clock.now(),
            )
        except TrickleError as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(MsgToHostSerializer(message).data, status=status.HTTP_201_CREATED)
