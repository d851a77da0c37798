"""Operators' API: JSON shapes of workunits and results, and the batch work-creation request."""

from __future__ import annotations

from rest_framework import serializers

from apps.work.domain.assignments import TARGET_OPTIONS, target_from_options
from apps.work.models import Result, Workunit
from apps.work.services.create import (
    INT32_MAX,
    INT64_MAX,
    MAX_DELAY_BOUND,
    MAX_REPLICAS,
    MAX_WORKUNIT_NAME_BYTES,
)


class ResultSerializer(serializers.ModelSerializer):
    workunit: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)
    app: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Result
        fields = [
            "id",
            "name",
            "workunit",
            "app",
            "server_state",
            "outcome",
            "client_state",
            "validate_state",
            "host",
            "sent_time",
            "report_deadline",
            "received_time",
            "exit_status",
            "elapsed_time",
            "cpu_time",
            "claimed_credit",
            "granted_credit",
            "platform",
            "version_num",
            "plan_class",
        ]


class WorkunitSerializer(serializers.ModelSerializer):
    app: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Workunit
        fields = [
            "id",
            "name",
            "app",
            "batch",
            "priority",
            "create_time",
            "rsc_fpops_est",
            "rsc_fpops_bound",
            "rsc_memory_bound",
            "rsc_disk_bound",
            "delay_bound",
            "min_quorum",
            "target_nresults",
            "max_error_results",
            "max_total_results",
            "max_success_results",
            "need_validate",
            "canonical_result",
            "error_mask",
            "assimilate_state",
            "file_delete_state",
            "transition_time",
        ]


class InputSpecSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=254)
    open_name = serializers.CharField(max_length=254, required=False, allow_blank=True)
    content_base64 = serializers.CharField(
        required=False, help_text="File content; omit to use a staged file"
    )
    sticky = serializers.BooleanField(default=False)


class OutputSpecSerializer(serializers.Serializer):
    open_name = serializers.CharField(max_length=254)
    max_nbytes = serializers.IntegerField(min_value=1, max_value=INT64_MAX)
    gzip_when_done = serializers.BooleanField(default=False)
    optional = serializers.BooleanField(default=False)


def _replicas(minimum: int) -> serializers.IntegerField:
    return serializers.IntegerField(min_value=minimum, max_value=MAX_REPLICAS, required=False)


def _target_id() -> serializers.IntegerField:
    return serializers.IntegerField(min_value=1, max_value=2**63 - 1, required=False)


class JobSpecSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=MAX_WORKUNIT_NAME_BYTES, required=False, allow_blank=True)
    command_line = serializers.CharField(max_length=1000, required=False, allow_blank=True)
    rsc_fpops_est = serializers.FloatField(min_value=0, required=False)
    rsc_fpops_bound = serializers.FloatField(min_value=0, required=False)
    rsc_memory_bound = serializers.FloatField(min_value=0, required=False)
    rsc_disk_bound = serializers.FloatField(min_value=0, required=False)
    delay_bound = serializers.FloatField(min_value=1, max_value=MAX_DELAY_BOUND, required=False)
    min_quorum = _replicas(1)
    target_nresults = _replicas(1)
    max_error_results = _replicas(0)
    max_total_results = _replicas(1)
    max_success_results = _replicas(1)
    priority = serializers.IntegerField(
        required=False, default=0, min_value=-INT32_MAX - 1, max_value=INT32_MAX
    )
    batch = serializers.IntegerField(min_value=0, max_value=INT32_MAX, required=False, default=0)
    inputs = InputSpecSerializer(many=True, required=False, default=list)
    outputs = OutputSpecSerializer(many=True, required=False)
    # create_work's targeted and broadcast jobs: at most one of these.
    target_host = _target_id()
    target_user = _target_id()
    target_team = _target_id()
    broadcast = serializers.BooleanField(required=False, default=False, help_text="One result for every host")
    broadcast_user = _target_id()
    broadcast_team = _target_id()

    def validate(self, attrs: dict) -> dict:
        try:
            attrs["target"] = target_from_options(
                {k: attrs.pop(k, None) for k in [*TARGET_OPTIONS, "broadcast"]}
            )
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from exc
        return attrs


class BatchCreateSerializer(serializers.Serializer):
    appname = serializers.CharField(max_length=100)
    jobs = JobSpecSerializer(many=True, allow_empty=False, max_length=10000)  # type: ignore[call-arg]  # for the ListSerializer
