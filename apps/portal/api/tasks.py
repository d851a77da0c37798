"""Operators' JSON of the task pages: results.php (an account's or a computer's tasks by
BOINC's state filters, with the Status text and the credit column), its summary (counts,
pending and granted credit) and result.php (one task). Staff with the view permission on
results, as the admin's results list asks."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from apps.core.api.schema import BAD_REQUEST, FORBIDDEN, NOT_FOUND
from apps.hosts.models import Host
from apps.portal import task_selectors as sel
from apps.portal.task_states import FILTER_NAMES, TaskFilter, task_filter_parse
from apps.projects.models import Project
from apps.volunteers.models import Account
from apps.work.api.serializers import ResultSerializer
from apps.work.domain.result_status import task_credit_pending, task_state_of, task_status_text
from apps.work.models import Result


class TaskSerializer(ResultSerializer):
    """A result as the task pages show it: the operators' result fields, its account, and
    BOINC's Status phrase and Credit column."""

    status = serializers.SerializerMethodField(help_text="BOINC's Status column (state_string)")
    credit = serializers.SerializerMethodField(help_text='"pending", the granted credit, or null')

    class Meta(ResultSerializer.Meta):
        fields = [*ResultSerializer.Meta.fields, "account", "status", "credit"]

    def get_status(self, result: Result) -> str:
        return task_status_text(task_state_of(result))

    def get_credit(self, result: Result) -> str | float | None:
        if task_credit_pending(task_state_of(result)):
            return "pending"
        return result.granted_credit if result.granted_credit > 0 else None


_STATE = OpenApiParameter(
    "state",
    OpenApiTypes.STR,
    enum=list(FILTER_NAMES.values()),
    description="BOINC's task filters (or their numbers 0-6); all tasks otherwise",
)
_OWNER = [
    OpenApiParameter("userid", OpenApiTypes.INT, description="An account's tasks"),
    OpenApiParameter("hostid", OpenApiTypes.INT, description="A computer's tasks"),
]
_SUMMARY = inline_serializer(
    "TaskSummary",
    {
        "counts": serializers.DictField(child=serializers.IntegerField()),
        "granted_credit": serializers.FloatField(),
        "pending_credit": serializers.FloatField(),
    },
)


@extend_schema_view(
    list=extend_schema(
        parameters=[*_OWNER, _STATE],
        responses={200: TaskSerializer(many=True), 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
    ),
    retrieve=extend_schema(responses={200: TaskSerializer, 403: FORBIDDEN, 404: NOT_FOUND}),
)
class TaskViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """?userid= or ?hostid= (one of them), ?state= as results.php; /<id>/ is result.php."""

    serializer_class = TaskSerializer
    filter_backends: list = []
    lookup_value_regex = "[0-9]+"

    def _project(self) -> Project:
        return get_object_or_404(Project, slug=self.kwargs["slug"])

    def _owner(self, project: Project) -> dict[str, Any]:
        params = self.request.query_params
        userid, hostid = params.get("userid", ""), params.get("hostid", "")
        if bool(userid) == bool(hostid):
            raise ValidationError({"detail": "give one of userid and hostid"})
        for name, value in (("userid", userid), ("hostid", hostid)):
            if value and not (value.isascii() and value.isdigit() and len(value) <= 18):
                raise ValidationError({name: ["not an id"]})
        if userid:
            return {"account": get_object_or_404(Account, project=project, pk=int(userid))}
        return {"host": get_object_or_404(Host, project=project, pk=int(hostid))}

    def get_queryset(self) -> QuerySet[Result]:
        if getattr(self, "swagger_fake_view", False) or self.action == "retrieve":
            return Result.objects.filter(project__slug=self.kwargs.get("slug", "")).select_related("app")
        project = self._project()
        state = task_filter_parse(self.request.query_params.get("state"))
        return sel.task_list(project=project, state=state, **self._owner(project))

    @extend_schema(
        parameters=_OWNER, responses={200: _SUMMARY, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND}
    )
    @action(detail=False)
    def summary(self, request: Request, slug: str) -> Response:
        """Counts per filter, the credit granted (the owner's total) and the estimated
        credit of the completed tasks waiting for validation."""
        project = self._project()
        summary = sel.task_summary(project=project, **self._owner(project))
        return Response(
            {
                "counts": {FILTER_NAMES[f]: summary.counts[f] for f in TaskFilter},
                "granted_credit": summary.granted_credit,
                "pending_credit": summary.pending_credit,
            }
        )
