"""The submitters' JSON: batches with their figures, job descriptions as submit_batch takes
them (read into the same descriptions the XML RPCs parse), jobs and their status."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.protocol.submit_rpc import JOB_PARAMS, BatchDesc, InputFileDesc, JobDesc
from apps.submit.domain.states import BatchState
from apps.submit.models import Batch

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MAX = 2**63 - 1


class BatchSerializer(serializers.ModelSerializer):
    app = serializers.CharField(source="app.name", read_only=True)
    owner = serializers.IntegerField(source="owner_id", read_only=True)
    state_name = serializers.SerializerMethodField(
        help_text="INIT, IN_PROGRESS, COMPLETE, ABORTED or RETIRED"
    )

    class Meta:
        model = Batch
        fields = [
            "id",
            "name",
            "app",
            "owner",
            "state",
            "state_name",
            "create_time",
            "completion_time",
            "expire_time",
            "est_completion_time",
            "njobs",
            "njobs_success",
            "nerror_jobs",
            "njobs_in_progress",
            "fraction_done",
            "credit_estimate",
            "credit_canonical",
            "files_deleted",
        ]
        read_only_fields = fields

    def get_state_name(self, batch: Batch) -> str:
        return BatchState(batch.state).name


class SubmitBatchCreateSerializer(serializers.Serializer):
    app = serializers.CharField(max_length=254)
    name = serializers.CharField(max_length=254, required=False, default="", allow_blank=True)
    expire_time = serializers.FloatField(
        required=False, default=0, min_value=0, help_text="Unix time; 0 = never"
    )


class ExpireTimeSerializer(serializers.Serializer):
    expire_time = serializers.FloatField(min_value=0, help_text="Unix time; 0 = never")


class InputFileSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        ["local_staged", "inline", "remote"],
        help_text="local_staged: an uploaded jf_ file; inline: the contents; remote: a file hosts download from url",
    )
    # BOINC's field name; DRF's metaclass takes declared fields off the class, so no clash.
    source = serializers.CharField(  # type: ignore[assignment]
        required=False,
        default="",
        allow_blank=True,
        trim_whitespace=False,
        help_text="The jf_ name, or the contents",
    )
    url = serializers.CharField(required=False, default="", allow_blank=True, max_length=1000)
    nbytes = serializers.IntegerField(required=False, default=0, min_value=0, max_value=INT64_MAX)
    md5 = serializers.CharField(required=False, default="", allow_blank=True, max_length=32)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        needed = ("url", "md5", "nbytes") if attrs["mode"] == "remote" else ("source",)
        missing = [name for name in needed if not attrs[name]]
        if missing:
            raise serializers.ValidationError({name: f"required in mode {attrs['mode']}" for name in missing})
        return attrs


class JobSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, default="", allow_blank=True, max_length=254)
    rsc_fpops_est = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0)
    command_line = serializers.CharField(required=False, default="", allow_blank=True, trim_whitespace=False)
    priority = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=INT32_MIN, max_value=INT32_MAX
    )
    target_team = serializers.IntegerField(required=False, default=0, min_value=0, max_value=INT32_MAX)
    target_user = serializers.IntegerField(required=False, default=0, min_value=0, max_value=INT32_MAX)
    target_host = serializers.IntegerField(required=False, default=0, min_value=0, max_value=INT32_MAX)
    input_template = serializers.CharField(required=False, default="", allow_blank=True)
    output_template = serializers.CharField(required=False, default="", allow_blank=True)
    input_files = InputFileSerializer(many=True, required=False, default=list)


class JobsSerializer(serializers.Serializer):
    """A batch's jobs as submit_batch takes them; the templates named are in the project's
    templates directory (the app's own by default)."""

    jobs = JobSerializer(many=True, allow_empty=False)
    job_params = serializers.DictField(
        child=serializers.FloatField(min_value=0),
        required=False,
        default=dict,
        help_text=f"Defaults for every job: {', '.join(JOB_PARAMS)}",
    )
    priority = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=INT32_MIN, max_value=INT32_MAX
    )
    allocation_priority = serializers.BooleanField(required=False, default=False)
    input_template_filename = serializers.CharField(required=False, default="", allow_blank=True)
    output_template_filename = serializers.CharField(required=False, default="", allow_blank=True)

    def __init__(self, *args: Any, max_jobs: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_jobs = max_jobs

    def validate_jobs(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.max_jobs and len(jobs) > self.max_jobs:
            raise serializers.ValidationError(f"more than {self.max_jobs} jobs in one request")
        return jobs

    def validate_job_params(self, params: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(params) - set(JOB_PARAMS))
        if unknown:
            raise serializers.ValidationError(f"unknown job parameters: {', '.join(unknown)}")
        return {k: v for k, v in params.items() if v}


class EstimateSerializer(JobsSerializer):
    app = serializers.CharField(max_length=254)


def batch_desc(data: dict[str, Any], *, app_name: str, batch_id: int = 0) -> BatchDesc:
    """The validated JSON as the description the XML RPCs build: one submission service."""
    jobs = tuple(
        JobDesc(
            name=job["name"].strip(),
            rsc_fpops_est=job["rsc_fpops_est"],
            command_line=job["command_line"],
            target_team=job["target_team"],
            target_user=job["target_user"],
            target_host=job["target_host"],
            priority=job["priority"],
            input_template=job["input_template"].encode() or None,
            output_template=job["output_template"].encode() or None,
            input_files=tuple(InputFileDesc(**f) for f in job["input_files"]),
        )
        for job in data["jobs"]
    )
    return BatchDesc(
        app_name=app_name,
        batch_id=batch_id,
        allocation_priority=data["allocation_priority"],
        priority=data["priority"],
        job_params=data["job_params"],
        input_template_filename=data["input_template_filename"],
        output_template_filename=data["output_template_filename"],
        jobs=jobs,
    )


class JobStatusSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField(help_text="queued, in_progress, done or error")
    canonical_instance_id = serializers.IntegerField(help_text="The canonical result's id; 0 if none yet")
    errors = serializers.ListField(child=serializers.CharField())  # type: ignore[assignment]  # a field, as above
    exit_statuses = serializers.ListField(child=serializers.IntegerField())
    cpu_time = serializers.FloatField(allow_null=True)


class FileNamesSerializer(serializers.Serializer):
    names = serializers.ListField(
        child=serializers.CharField(max_length=64), max_length=10000, help_text="jf_<md5 of the content>"
    )
    batch_id = serializers.IntegerField(required=False, default=0, min_value=0, max_value=2**62)
    delete_time = serializers.FloatField(required=False, default=0, min_value=0, help_text="Unix time")
