"""Operators' JSON API for work: list/filter workunits and results; create a batch of jobs."""

from __future__ import annotations

import base64
import binascii
import tempfile
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from apps.applications.models import App
from apps.core.api import NameLookupMixin
from apps.core.api.schema import BAD_REQUEST, FORBIDDEN, NOT_FOUND, UnpaginatedCreateSchema
from apps.projects.models import Project
from apps.work.api.filters import ResultFilterSet, WorkunitFilterSet
from apps.work.api.serializers import BatchCreateSerializer, ResultSerializer, WorkunitSerializer
from apps.work.models import Result, Workunit
from apps.work.services import InputSpec, JobSpec, OutputSpec, WorkError, workunits_create
from apps.work.services.create import DEFAULT_OUTPUTS, WU_PARAMS, name_check


class ProjectScopedMixin:
    """Views under /projects/<slug>/: an unknown project is a JSON 404, also for a list."""

    kwargs: dict

    def project(self) -> Project:
        return get_object_or_404(Project, slug=self.kwargs["slug"])

    def paginate_queryset(self, queryset: QuerySet[Any]) -> list[Any] | None:
        # The list query filters by slug, so it is empty for an unknown project too; only then
        # is the project looked up (one indexed query), never on a page with rows.
        page = super().paginate_queryset(queryset)  # type: ignore[misc]  # the view class supplies it
        if page is not None and not page and not Project.objects.filter(slug=self.kwargs["slug"]).exists():
            raise NotFound("no such project")
        return page


@extend_schema_view(
    list=extend_schema(
        responses={200: WorkunitSerializer(many=True), 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND}
    ),
    retrieve=extend_schema(responses={200: WorkunitSerializer, 403: FORBIDDEN, 404: NOT_FOUND}),
)
class WorkunitViewSet(
    NameLookupMixin,
    ProjectScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Workunits of a project; POST a batch of jobs to create them (create_work)."""

    serializer_class = WorkunitSerializer
    filterset_class = WorkunitFilterSet
    lookup_field = "name"
    schema = UnpaginatedCreateSchema()

    def get_queryset(self) -> QuerySet[Workunit]:
        if getattr(self, "swagger_fake_view", False):
            # Schema generation has no slug; the model alone gives the filters their types.
            return Workunit.objects.none()
        return (
            Workunit.objects.filter(project__slug=self.kwargs["slug"]).select_related("app").order_by("-id")
        )

    @extend_schema(
        request=BatchCreateSerializer,
        responses={201: WorkunitSerializer(many=True), 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
    )
    def create(self, request: Request, slug: str) -> Response:
        project = self.project()
        batch = BatchCreateSerializer(data=request.data)
        batch.is_valid(raise_exception=True)
        app = App.objects.filter(project=project, name=batch.validated_data["appname"]).first()
        if app is None:
            return Response({"appname": ["no such app in this project"]}, status=status.HTTP_400_BAD_REQUEST)
        with tempfile.TemporaryDirectory() as scratch:
            try:
                jobs = [job_spec(data, Path(scratch)) for data in batch.validated_data["jobs"]]
                created = workunits_create(project=project, app=app, jobs=jobs)
            except WorkError as exc:
                return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(WorkunitSerializer(created, many=True).data, status=status.HTTP_201_CREATED)


def job_spec(data: dict, scratch: Path) -> JobSpec:
    """The service's JobSpec for one API job; uploaded contents are written under ``scratch``,
    each in a directory of its own, so two inputs of one name cannot overwrite each other
    before staging compares them."""
    inputs = []
    for spec in data.get("inputs", []):
        path = None
        if spec.get("content_base64") is not None:
            try:
                content = base64.b64decode(spec["content_base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise WorkError(f"input {spec['name']!r}: content_base64 is not valid base64") from exc
            name_check("input file", spec["name"])
            path = Path(tempfile.mkdtemp(dir=scratch)) / spec["name"]
            path.write_bytes(content)
        inputs.append(
            InputSpec(
                path=path,
                name=spec["name"],
                open_name=spec.get("open_name", ""),
                sticky=spec.get("sticky", False),
            )
        )
    outputs = tuple(OutputSpec(**o) for o in data["outputs"]) if data.get("outputs") else DEFAULT_OUTPUTS
    keys = ("command_line", *WU_PARAMS, "priority", "batch")
    return JobSpec(
        name=data.get("name", ""),
        inputs=tuple(inputs),
        outputs=outputs,
        target=data.get("target"),
        **{k: data[k] for k in keys if k in data},
    )


@extend_schema_view(
    list=extend_schema(
        responses={200: ResultSerializer(many=True), 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND}
    ),
    retrieve=extend_schema(responses={200: ResultSerializer, 403: FORBIDDEN, 404: NOT_FOUND}),
)
class ResultViewSet(
    NameLookupMixin,
    ProjectScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Results of a project, filterable by state, app, host and workunit."""

    serializer_class = ResultSerializer
    filterset_class = ResultFilterSet
    lookup_field = "name"

    def get_queryset(self) -> QuerySet[Result]:
        if getattr(self, "swagger_fake_view", False):
            return Result.objects.none()
        return (
            Result.objects.filter(project__slug=self.kwargs["slug"])
            .select_related("app", "workunit")
            .order_by("-id")
        )
