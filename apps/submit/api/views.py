"""The submitters' JSON API: the XML RPCs' batches, jobs, job files and outputs, through the
same services. Authenticated by the account key (``Authorization: Token <authenticator>``);
a submitter acts only on the batches it may manage (its own, or as a manager), and every
refusal is a JSON ``{"error": ...}`` with nothing written."""

from __future__ import annotations

import tempfile
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.applications.models import App
from apps.core.api.schema import ERROR, NOT_FOUND
from apps.projects.models import Project
from apps.submit import selectors
from apps.submit.api.auth import AuthenticatorAuthentication, IsSubmitter, Submitter
from apps.submit.api.serializers import (
    BatchSerializer,
    EstimateSerializer,
    ExpireTimeSerializer,
    FileNamesSerializer,
    JobsSerializer,
    JobStatusSerializer,
    SubmitBatchCreateSerializer,
    batch_desc,
)
from apps.submit.models import Batch, UserSubmit
from apps.submit.services import batches as batch_services
from apps.submit.services import files as file_services
from apps.submit.services import submission
from apps.submit.services.permissions import (
    NO_SUCH_BATCH,
    NOT_OWNER,
    SubmitError,
    app_named,
    batch_managed,
    submitter_check,
)
from apps.volunteers.models import Account

# Refusals that are about the record rather than the input.
_STATUS = {NO_SUCH_BATCH: 404, NOT_OWNER: 403, "no job instance": 404, "no such file": 404}
_REFUSED = {
    400: OpenApiResponse(ERROR, description="Bad input or a refusal: {field: [messages]} or {error: ...}"),
    401: OpenApiResponse(OpenApiTypes.OBJECT, description="No or a wrong account key"),
    403: OpenApiResponse(ERROR, description="Not a submitter, or another submitter's batch"),
    404: NOT_FOUND,
}
_OK = inline_serializer("SubmitOk", {"success": serializers.BooleanField()})
_ESTIMATE = inline_serializer("BatchEstimate", {"seconds": serializers.FloatField()})
_ABSENT = inline_serializer("AbsentFiles", {"absent": serializers.ListField(child=serializers.CharField())})
_BINARY: dict[Any, Any] = {(200, "application/octet-stream"): OpenApiTypes.BINARY, **_REFUSED}


class _SubmitterView(APIView):
    authentication_classes = [AuthenticatorAuthentication]
    permission_classes = [IsSubmitter]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, SubmitError):
            return Response({"error": exc.message}, status=_STATUS.get(exc.message, 400))
        return super().handle_exception(exc)

    def project(self) -> Project:
        return get_object_or_404(Project, slug=self.kwargs["slug"])

    @property
    def submitter(self) -> Submitter:
        user = self.request.user
        assert isinstance(user, Submitter)  # IsSubmitter let the request in
        return user

    def batch(self, pk: str) -> Batch:
        if not pk.isascii() or not pk.isdigit() or len(pk) > 18:
            raise SubmitError(NO_SUCH_BATCH)
        return batch_managed(project=self.project(), account=self.submitter.account, batch_id=int(pk))


def _valid(serializer: serializers.Serializer) -> dict[str, Any]:
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@extend_schema_view(
    list=extend_schema(responses={200: BatchSerializer(many=True), **_REFUSED}),
    retrieve=extend_schema(responses={200: BatchSerializer, **_REFUSED}),
)
class BatchViewSet(_SubmitterView, viewsets.GenericViewSet):
    """A submitter's batches: create, estimate, submit jobs, follow, abort, retire."""

    serializer_class = BatchSerializer
    filter_backends: list = []
    lookup_value_regex = "[^/]+"

    def get_queryset(self) -> QuerySet[Batch]:
        if getattr(self, "swagger_fake_view", False):
            return Batch.objects.none()
        return Batch.objects.filter(project=self.project(), owner=self.submitter.account).select_related(
            "app"
        )

    def list(self, request: Request, slug: str) -> Response:
        """The submitter's own batches, newest first, their figures up to date."""
        page = self.paginate_queryset(self.get_queryset())
        batches = [batch_services.batch_current(b) for b in page or []]
        return self.get_paginated_response(BatchSerializer(batches, many=True).data)

    def retrieve(self, request: Request, slug: str, pk: str) -> Response:
        """A batch with its progress: jobs done, errors, in progress, estimated completion."""
        return Response(BatchSerializer(batch_services.batch_current(self.batch(pk))).data)

    @extend_schema(request=SubmitBatchCreateSerializer, responses={201: BatchSerializer, **_REFUSED})
    def create(self, request: Request, slug: str) -> Response:
        """An empty batch (state INIT) to upload files for and submit jobs into."""
        data = _valid(SubmitBatchCreateSerializer(data=request.data))
        project = self.project()
        app = app_named(project=project, name=data["app"])
        account, _ = self._may_submit(project, app)
        batch = submission.batch_create(
            project=project, account=account, app=app, name=data["name"], expire_time=data["expire_time"]
        )
        return Response(BatchSerializer(batch).data, status=status.HTTP_201_CREATED)

    def _may_submit(self, project: Project, app: App) -> tuple[Account, UserSubmit]:
        """The XML RPCs' check that the submitter may submit to ``app``."""
        return submitter_check(project=project, authenticator=str(self.request.auth), app=app)

    @extend_schema(request=EstimateSerializer, responses={200: _ESTIMATE, **_REFUSED})
    @action(detail=False, methods=["post"])
    def estimate(self, request: Request, slug: str) -> Response:
        """Seconds the whole project would take for these jobs (BOINC's estimate_batch)."""
        data = _valid(EstimateSerializer(data=request.data, max_jobs=settings.COBBLESTONE_SUBMIT_MAX_JOBS))
        project = self.project()
        app = app_named(project=project, name=data["app"])
        self._may_submit(project, app)
        desc = batch_desc(data, app_name=app.name)
        return Response({"seconds": float(submission.batch_estimate(project=project, app=app, desc=desc))})

    @extend_schema(methods=["get"], responses={200: JobStatusSerializer(many=True), **_REFUSED}, request=None)
    @extend_schema(methods=["post"], request=JobsSerializer, responses={200: BatchSerializer, **_REFUSED})
    @action(detail=True, methods=["get", "post"])
    def jobs(self, request: Request, slug: str, pk: str) -> Response:
        """GET: the batch's jobs in id order with their status. POST: submit the jobs of a
        batch still in state INIT (all or none)."""
        batch = self.batch(pk)
        if request.method == "GET":
            jobs: Any = selectors.batch_jobs(batch, details=True)  # DRF's paginator takes a list too
            page = self.paginate_queryset(jobs)
            return self.get_paginated_response(JobStatusSerializer(page, many=True).data)
        data = _valid(JobsSerializer(data=request.data, max_jobs=settings.COBBLESTONE_SUBMIT_MAX_JOBS))
        project = self.project()
        account, submitter = self._may_submit(project, batch.app)
        desc = batch_desc(data, app_name=batch.app.name, batch_id=batch.id)
        batch = submission.batch_submit(
            project=project, account=account, submitter=submitter, app=batch.app, desc=desc
        )
        return Response(BatchSerializer(batch).data)

    @extend_schema(request=None, responses={200: BatchSerializer, **_REFUSED})
    @action(detail=True, methods=["post"])
    def abort(self, request: Request, slug: str, pk: str) -> Response:
        """Cancel every job of the batch; hosts abort the tasks they hold."""
        batch = self.batch(pk)
        batch_services.batch_abort(batch=batch)
        return Response(BatchSerializer(batch).data)

    @extend_schema(request=None, responses={200: BatchSerializer, **_REFUSED})
    @action(detail=True, methods=["post"])
    def retire(self, request: Request, slug: str, pk: str) -> Response:
        """Done with the batch: its unsent jobs are cancelled and its outputs deleted."""
        batch = self.batch(pk)
        batch_services.batch_retire(batch=batch)
        return Response(BatchSerializer(batch).data)

    @extend_schema(request=ExpireTimeSerializer, responses={200: BatchSerializer, **_REFUSED})
    @action(detail=True, methods=["post"], url_path="expire_time")
    def expire_time(self, request: Request, slug: str, pk: str) -> Response:
        """Abort and retire the batch at this Unix time (0: never)."""
        data = _valid(ExpireTimeSerializer(data=request.data))
        batch = self.batch(pk)
        submission.batch_expire_time_set(batch=batch, expire_time=data["expire_time"])
        return Response(BatchSerializer(batch).data)

    @extend_schema(responses=_BINARY)
    @action(detail=True, methods=["get"])
    def outputs(self, request: Request, slug: str, pk: str) -> FileResponse:
        """A zip of the canonical outputs of the batch's jobs."""
        batch = self.batch(pk)
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes it
        file_services.batch_zip(
            project=self.project(), batch_id=batch.id, out=spool, viewer=self.submitter.account
        )
        spool.seek(0)
        return FileResponse(spool, as_attachment=True, filename=f"batch_{batch.id}.zip")


class JobFilesView(_SubmitterView):
    """Input files, content-addressed (``jf_<md5>``), as job_file.php keeps them."""

    @extend_schema(
        request={"multipart/form-data": OpenApiTypes.OBJECT},
        responses={201: _OK, **_REFUSED},
        description="Multipart: each file in a field named by its jf_<md5> name; optional "
        "batch_id and delete_time (Unix time) fields. All files are stored, or none.",
    )
    def post(self, request: Request, slug: str) -> Response:
        form = _valid(FileNamesSerializer(data={"names": list(request.FILES), **_form_fields(request)}))
        names = sorted(request.FILES)
        file_services.files_upload(
            project=self.project(),
            account=self.submitter.account,
            names=names,
            files=[request.FILES[n] for n in names],
            batch_id=form["batch_id"],
            delete_time=form["delete_time"],
        )
        return Response({"success": True}, status=status.HTTP_201_CREATED)


def _form_fields(request: Request) -> dict[str, Any]:
    return {k: request.data[k] for k in ("batch_id", "delete_time") if k in request.data}


class JobFilesQueryView(_SubmitterView):
    @extend_schema(request=FileNamesSerializer, responses={200: _ABSENT, **_REFUSED})
    def post(self, request: Request, slug: str) -> Response:
        """Which of these files the project lacks; those it has are kept till delete_time
        and joined to the batch."""
        data = _valid(FileNamesSerializer(data=request.data))
        absent = file_services.files_query(
            project=self.project(),
            account=self.submitter.account,
            names=data["names"],
            batch_id=data["batch_id"],
            delete_time=data["delete_time"],
        )
        return Response({"absent": [data["names"][i] for i in absent]})


class ResultFileView(_SubmitterView):
    @extend_schema(responses=_BINARY)
    def get(self, request: Request, slug: str, name: str, num: int) -> FileResponse:
        """Output file ``num`` (from 0) of a result of one of the submitter's batches."""
        path = file_services.result_file(
            project=self.project(), result_name=name, file_num=num, viewer=self.submitter.account
        )
        return FileResponse(path.open("rb"), as_attachment=True, filename=path.name)
