"""Writes on workunits and results; each service opens its own transaction."""

from apps.work.services.assimilator import workunits_assimilate
from apps.work.services.cancel import workunit_cancel, workunit_cancel_batch
from apps.work.services.create import (
    InputSpec,
    JobSpec,
    OutputSpec,
    RemoteFile,
    WorkError,
    result_create,
    workunit_create,
    workunits_create,
)
from apps.work.services.file_deleter import files_delete
from apps.work.services.purge import workunits_purge
from apps.work.services.transitioner import workunit_transition, workunits_transition
from apps.work.services.validator import workunit_validate, workunits_validate

__all__ = [
    "InputSpec",
    "JobSpec",
    "OutputSpec",
    "RemoteFile",
    "WorkError",
    "files_delete",
    "result_create",
    "workunit_cancel",
    "workunit_cancel_batch",
    "workunit_create",
    "workunit_transition",
    "workunit_validate",
    "workunits_assimilate",
    "workunits_create",
    "workunits_purge",
    "workunits_transition",
    "workunits_validate",
]
