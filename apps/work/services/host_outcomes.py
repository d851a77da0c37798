"""Judge the hosts of some results (timeout, invalid) in their host_app_version records."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from apps.applications.models import App
from apps.credit.domain.quota import JobOutcome
from apps.credit.services import HostOutcome, host_app_versions_record_outcomes
from apps.work.models import Result


def results_record_outcome(
    results: Iterable[Result],
    *,
    outcome: JobOutcome,
    delay_bound: float,
    now: datetime,
    app: App | None = None,
) -> None:
    """Seed 003 error rate, probation and quota for each result's host and app version
    (``app``: the results' app, if the caller has it loaded with its project)."""
    host_app_versions_record_outcomes(
        outcomes=[
            HostOutcome(
                host_id=r.host_id,
                app_id=r.app_id,
                app_version_id=r.app_version_id,
                anonymous_proc_type=r.anonymous_proc_type,
                outcome=outcome,
                delay_bound=delay_bound,
            )
            for r in results
            if r.host_id is not None
        ],
        now=now,
        app=app,
    )
