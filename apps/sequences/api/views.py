"""Operators' API for work sequences (docs/sequences.md): list, create, extend, end, relocate.

``/api/v1/projects/<slug>/sequences/`` (admin users only, the API's default permission). Creating
takes the step template of a batch job (apps.work.api.serializers) plus the sequence fields; the
job's ``inputs`` are step 0's (the initial state), ``shared_inputs`` every step's.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.applications.models import App
from apps.core import clock
from apps.core.api import NameLookupMixin
from apps.core.api.schema import BAD_REQUEST, CONFLICT, FORBIDDEN, NOT_FOUND
from apps.projects.models import Project
from apps.sequences.api.filters import WorkSequenceFilterSet
from apps.sequences.domain.waiting import SequenceWait
from apps.sequences.models import WorkSequence
from apps.sequences.services import (
    SequenceSpec,
    sequence_create,
    sequence_end,
    sequence_extend,
    sequence_relocate,
)
from apps.sequences.services.rows import steps_counted
from apps.sequences.services.steps import MAX_STEPS_PER_CALL
from apps.sequences.services.waiting import sequence_wait
from apps.work.api.serializers import InputSpecSerializer, JobSpecSerializer, OutputSpecSerializer
from apps.work.api.views import ProjectScopedMixin, job_spec
from apps.work.domain.states import SequenceState
from apps.work.services import WorkError
from apps.work.services.create import INT32_MAX, MAX_DELAY_BOUND


class WorkSequenceSerializer(serializers.ModelSerializer):
    app: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    state = serializers.CharField(source="get_state_display", read_only=True)
    steps = serializers.IntegerField(source="n_steps", read_only=True)
    validated = serializers.SerializerMethodField()
    dispatched = serializers.SerializerMethodField()
    checkpoint_result: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    replica_of: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )
    assigned_host = serializers.SerializerMethodField(
        help_text="The host holding it; null unless ASSIGNED (an ended or failed one has none)"
    )

    class Meta:
        model = WorkSequence
        fields = [
            "id",
            "name",
            "app",
            "state",
            "steps",
            "validated",
            "dispatched",
            "expected_length",
            "max_result_time",
            "restartable_every",
            "assigned_host",
            "assigned_time",
            "last_progress_time",
            "checkpoint_result",
            "n_relocations",
            "n_disagreements",
            "error_reason",
            "relocated_from",
            "replica_of",
            "create_time",
        ]

    def get_assigned_host(self, obj: WorkSequence) -> int | None:
        return obj.assigned_host_id if obj.state == SequenceState.ASSIGNED else None

    def get_validated(self, obj: WorkSequence) -> int:
        return obj.n_steps if obj.first_unvalidated is None else obj.first_unvalidated.sequence_index or 0  # type: ignore[attr-defined]  # n_steps: annotated by the queryset

    def get_dispatched(self, obj: WorkSequence) -> int:
        return obj.n_steps if obj.first_undispatched is None else obj.first_undispatched.sequence_index or 0  # type: ignore[attr-defined]  # n_steps: annotated by the queryset


class SequenceWaitSerializer(serializers.Serializer):
    reason = serializers.CharField(
        help_text="host_to_take, chain_at_checkpoint, comparison or host_to_report"
    )
    chain = serializers.CharField(help_text="The chain waited for: this one, or a sibling behind it")
    step = serializers.IntegerField(help_text="The step to take or report, or the checkpoint step")
    host = serializers.IntegerField(source="host_id", allow_null=True, help_text="Its host; null: none yet")
    fresh_host_until = serializers.SerializerMethodField(
        help_text="Until then hosts that computed a result found invalid are passed over"
    )
    text = serializers.CharField(source="describe")

    def get_fresh_host_until(self, obj: SequenceWait) -> datetime | None:
        return None if obj.fresh_host_until is None else clock.from_unix(obj.fresh_host_until)


class WorkSequenceDetailSerializer(WorkSequenceSerializer):
    waiting = serializers.SerializerMethodField(help_text="What a live sequence waits for; null when over")

    class Meta(WorkSequenceSerializer.Meta):
        fields = [*WorkSequenceSerializer.Meta.fields, "waiting"]

    @extend_schema_field(SequenceWaitSerializer(allow_null=True))
    def get_waiting(self, obj: WorkSequence) -> dict | None:
        wait = sequence_wait(head=obj, now=clock.now())
        return None if wait is None else SequenceWaitSerializer(wait).data


class SequenceOutputSerializer(OutputSpecSerializer):
    state = serializers.BooleanField(default=False, help_text="The state the next step reads (else a report)")


class SequenceCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    appname = serializers.CharField(max_length=100)
    max_result_time = serializers.FloatField(min_value=1, max_value=MAX_DELAY_BOUND)
    length = serializers.IntegerField(
        min_value=1, max_value=MAX_STEPS_PER_CALL, required=False, allow_null=True, default=None
    )
    initial_steps = serializers.IntegerField(min_value=1, max_value=MAX_STEPS_PER_CALL, default=3)
    restartable_every = serializers.IntegerField(min_value=0, max_value=INT32_MAX, default=0)
    step = JobSpecSerializer(help_text="Every step's template; its inputs are step 0's only")
    outputs = SequenceOutputSerializer(many=True, allow_empty=False)
    shared_inputs = InputSpecSerializer(many=True, required=False, default=list)


class ExtendSerializer(serializers.Serializer):
    steps = serializers.IntegerField(min_value=1, max_value=MAX_STEPS_PER_CALL)
    final = serializers.BooleanField(default=False)


@extend_schema_view(
    list=extend_schema(
        responses={200: WorkSequenceSerializer(many=True), 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND}
    ),
    retrieve=extend_schema(responses={200: WorkSequenceDetailSerializer, 403: FORBIDDEN, 404: NOT_FOUND}),
)
class WorkSequenceViewSet(
    NameLookupMixin,
    ProjectScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Work sequences of a project with their progress; POST creates one (create_work --sequence)."""

    serializer_class = WorkSequenceSerializer
    lookup_field = "name"
    filterset_class = WorkSequenceFilterSet

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        # One sequence: what it waits for, which takes a few queries per sequence, so not the list.
        return WorkSequenceSerializer if self.action == "list" else WorkSequenceDetailSerializer

    def get_queryset(self) -> QuerySet[WorkSequence]:
        if getattr(self, "swagger_fake_view", False):
            # Schema generation has no slug; the model alone gives the filters their types.
            return WorkSequence.objects.none()
        return steps_counted(
            WorkSequence.objects.filter(project__slug=self.kwargs["slug"])
            .select_related(
                "app", "first_unvalidated", "first_undispatched", "checkpoint_result", "replica_of"
            )
            .order_by("-id")
        )

    @extend_schema(
        request=SequenceCreateSerializer,
        responses={201: WorkSequenceDetailSerializer, 400: BAD_REQUEST, 403: FORBIDDEN, 404: NOT_FOUND},
    )
    def create(self, request: Request, slug: str) -> Response:
        project = get_object_or_404(Project, slug=slug)
        body = SequenceCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        app = App.objects.filter(project=project, name=data["appname"]).first()
        if app is None:
            return Response({"appname": ["no such app in this project"]}, status=status.HTTP_400_BAD_REQUEST)
        outputs = [
            {**{k: v for k, v in o.items() if k != "state"}, "sequence_state": o["state"]}
            for o in data["outputs"]
        ]
        with tempfile.TemporaryDirectory() as scratch:
            try:
                first = job_spec({**data["step"], "outputs": outputs}, Path(scratch))
                shared = job_spec({"inputs": data["shared_inputs"]}, Path(scratch)).inputs
                spec = SequenceSpec(
                    name=data["name"],
                    job=replace(first, inputs=shared, name=""),
                    first_inputs=first.inputs,
                    max_result_time=data["max_result_time"],
                    length=data["length"],
                    initial_steps=data["initial_steps"],
                    restartable_every=data["restartable_every"],
                )
                seq = sequence_create(project=project, app=app, spec=spec)
            except WorkError as exc:
                return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            self.get_serializer(self.get_queryset().get(id=seq.id)).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        request=ExtendSerializer,
        responses={
            200: WorkSequenceDetailSerializer,
            400: BAD_REQUEST,
            403: FORBIDDEN,
            404: NOT_FOUND,
            409: CONFLICT,
        },
    )
    @action(detail=True, methods=["post"])
    def extend(self, request: Request, slug: str, name: str) -> Response:
        seq = self.get_object()
        body = ExtendSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            added = sequence_extend(
                sequence_id=seq.id, n_steps=body.validated_data["steps"], final=body.validated_data["final"]
            )
        except WorkError as exc:
            return Response({"error": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        if not added:
            return Response({"error": "the sequence has ended"}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(
        request=None,
        responses={200: WorkSequenceDetailSerializer, 403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT},
    )
    @action(detail=True, methods=["post"])
    def end(self, request: Request, slug: str, name: str) -> Response:
        seq = self.get_object()
        if not sequence_end(sequence_id=seq.id):
            return Response({"error": "the sequence is not live"}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(
        request=None,
        responses={200: WorkSequenceDetailSerializer, 403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT},
    )
    @action(detail=True, methods=["post"])
    def deassign(self, request: Request, slug: str, name: str) -> Response:
        seq = self.get_object()
        if not sequence_relocate(sequence_id=seq.id):
            return Response({"error": "the sequence is not assigned"}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(self.get_object()).data)
