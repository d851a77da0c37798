"""Writes on workunits, results and sequences; each service opens its own transaction."""

from apps.work.services.cancel import workunit_cancel, workunit_cancel_batch
from apps.work.services.create import (
    InputSpec,
    JobSpec,
    OutputSpec,
    WorkError,
    result_create,
    workunit_create,
    workunits_create,
)
from apps.work.services.sequences import sequence_deassign_many, sequence_end_many

__all__ = [
    "InputSpec",
    "JobSpec",
    "OutputSpec",
    "WorkError",
    "result_create",
    "sequence_deassign_many",
    "sequence_end_many",
    "workunit_cancel",
    "workunit_cancel_batch",
    "workunit_create",
    "workunits_create",
]
