"""Pure mapping of a BOINC project's database rows to Cobblestone's values.

Each ``map_*`` function takes one BOINC row (a mapping of column to value) and what it
refers to, and returns the Cobblestone column values (``Mapped``) or raises ``RowRefused``
saying which rule the row breaks. No Django: the services read, decide ids and write.
"""

from apps.boinc_import.domain.accounts import (
    AccountRules,
    map_team,
    map_user,
    stats_consent,
    stored_passwd_hash,
)
from apps.boinc_import.domain.applications import (
    VersionFile,
    map_app,
    map_app_version,
    map_platform,
)
from apps.boinc_import.domain.credit import CREDIT_TYPE_FLOPS, map_app_credit, map_deleted
from apps.boinc_import.domain.hosts import HavTarget, VersionRef, hav_target, map_host, map_host_app_version
from apps.boinc_import.domain.ids import IdMap, IdPlan, plan_ids
from apps.boinc_import.domain.paths import hier_dir
from apps.boinc_import.domain.schema import (
    NEWEST_REVISION,
    OLDEST_REVISION,
    REQUIRED_COLUMNS,
    db_revision_problem,
    schema_problems,
    schema_refusal,
)
from apps.boinc_import.domain.submit import map_batch, map_user_submit, map_user_submit_app, workunit_batch
from apps.boinc_import.domain.values import Mapped, Row, RowRefused, file_name_check
from apps.boinc_import.domain.work import (
    FINISHED_WORKUNIT_SQL,
    InputRef,
    OutputRef,
    input_files,
    map_assignment,
    map_result,
    map_workunit,
    output_files,
)

__all__ = [
    "CREDIT_TYPE_FLOPS",
    "FINISHED_WORKUNIT_SQL",
    "NEWEST_REVISION",
    "OLDEST_REVISION",
    "REQUIRED_COLUMNS",
    "AccountRules",
    "HavTarget",
    "IdMap",
    "IdPlan",
    "InputRef",
    "Mapped",
    "OutputRef",
    "Row",
    "RowRefused",
    "VersionFile",
    "VersionRef",
    "db_revision_problem",
    "file_name_check",
    "hav_target",
    "hier_dir",
    "input_files",
    "map_app",
    "map_app_credit",
    "map_app_version",
    "map_assignment",
    "map_batch",
    "map_deleted",
    "map_host",
    "map_host_app_version",
    "map_platform",
    "map_result",
    "map_team",
    "map_user",
    "map_user_submit",
    "map_user_submit_app",
    "map_workunit",
    "output_files",
    "plan_ids",
    "schema_problems",
    "schema_refusal",
    "stats_consent",
    "stored_passwd_hash",
    "workunit_batch",
]
