"""Small builders for credit-domain values; each test sets only what it is about."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from apps.core.domain.average import Average
from apps.credit.domain import AppVersionStats, HostAppVersionStats, ValidatedJob
from apps.credit.services import CreditJob, CreditWorkunit

NOW = 1_700_000_000.0
FPOPS_EST = 1e12
FPOPS_BOUND = 1e15
ELAPSED = 100.0
PEAK = 2e10
PFC = ELAPSED * PEAK  # 2e12, i.e. 2.0 per fpops_est

SETTLED_HOST = Average(n=50, avg=4.0)
SETTLED_VERSION = Average(n=500, avg=6.0)


def job(**changes: object) -> ValidatedJob:
    base = ValidatedJob(
        app_version_id=7,
        fpops_est=FPOPS_EST,
        fpops_bound=FPOPS_BOUND,
        elapsed_time=ELAPSED,
        peak_flops=PEAK,
        sent_time=NOW - 3600,
        received_time=NOW - 600,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def anonymous_job(**changes: object) -> ValidatedJob:
    return job(app_version_id=-2, **changes)


def hav(**changes: object) -> HostAppVersionStats:
    """A host_app_version out of probation with a settled pfc average of 4.0."""
    base = HostAppVersionStats(pfc=SETTLED_HOST, scale_probation=False)
    return replace(base, **changes)  # type: ignore[arg-type]


def app_version(**changes: object) -> AppVersionStats:
    """An app version with a settled pfc average of 6.0 and pfc_scale 0.5."""
    base = AppVersionStats(pfc=SETTLED_VERSION, pfc_scale=0.5)
    return replace(base, **changes)  # type: ignore[arg-type]


def credit_job(host: Any, version: Any, now: datetime, **changes: object) -> CreditJob:
    """A valid result of ``host`` on ``version`` as the validator hands it to credit_grant:
    300 s of a 1 GFLOPS estimate, sent ten minutes before ``now``."""
    base = CreditJob(
        result_id=1,
        host_id=host.id,
        account_id=host.account_id,
        app_version_id=version.id,
        anonymous_proc_type="",
        elapsed_time=300,
        flops_estimate=1e9,
        sent_time=now.timestamp() - 600,
        received_time=now.timestamp(),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def credit_workunit(app: Any, **changes: object) -> CreditWorkunit:
    base = CreditWorkunit(app_id=app.id, fpops_est=1e12, fpops_bound=1e14, delay_bound=86400)
    return replace(base, **changes)  # type: ignore[arg-type]
