"""Credit writes (docs/credit.md): grant credit for validated jobs, record what happened to a host's
jobs, normalize app versions (the main feeder's pass) and decay recent average credit daily.

``work`` calls these with plain frozen dataclasses defined here, so ``credit`` never imports
``work``. Every function locks rows in one order, the same in every module here: host → app
version → host_app_version → account → team → per-app credit. The scheduler locks a host before
its host_app_versions too, so validators neither deadlock with each other nor with it; on
SQLite every write transaction holds the database lock, which serialises them anyway.

The app_version pfc average is the row several validators update at once (the design warns that
its update must be atomic). Here it is read with SELECT ... FOR UPDATE inside the
validator's transaction, updated with that transaction's samples in turn and written before
commit, so no sample is lost whatever the number of validators.
"""

from apps.credit.services.feeder import credit_normalize_app, credit_normalize_project
from apps.credit.services.grant import (
    CreditJob,
    CreditWorkunit,
    JudgedWorkunit,
    ResultCredit,
    credit_grant,
    credit_grant_batch,
)
from apps.credit.services.outcomes import HostOutcome, host_app_versions_record_outcomes
from apps.credit.services.stats import credit_update_stats

__all__ = [
    "CreditJob",
    "CreditWorkunit",
    "HostOutcome",
    "JudgedWorkunit",
    "ResultCredit",
    "credit_grant",
    "credit_grant_batch",
    "credit_normalize_app",
    "credit_normalize_project",
    "credit_update_stats",
    "host_app_versions_record_outcomes",
]
