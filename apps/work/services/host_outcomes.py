"""Judge the hosts of some results (timeout, invalid) in their host_app_version records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from apps.applications.models import App
from apps.credit.domain.quota import JobOutcome
from apps.credit.services import HostOutcome, host_app_versions_record_outcomes
from apps.work.models import Result
from apps.work.queries import host_app_versions_lock_for_results


def results_record_outcome(
    results: Iterable[Result],
    *,
    outcome: JobOutcome,
    delay_bound: float,
    now: datetime,
    app: App | None = None,
) -> None:
    """CreditNew's error rate, probation and quota for each result's host and app version
    (``app``: the results' app, if the caller has it loaded with its project)."""
    host_app_versions_record_outcomes(
        outcomes=host_outcomes(results, outcome=outcome, delay_bound=delay_bound), now=now, app=app
    )


def host_outcomes(results: Iterable[Result], *, outcome: JobOutcome, delay_bound: float) -> list[HostOutcome]:
    """The outcome of each result that has a host, for the host_app_version it ran as."""
    return [
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
    ]


def host_app_versions_lock_for_workunits(
    workunit_ids: Sequence[int], where: str, params: Sequence[Any]
) -> None:
    """Lock the host_app_versions of the workunits' results that match ``where`` (SQL on
    alias ``r``, with ``params``), in one statement; call it before locking the results.

    A scheduler RPC locks its host's host_app_versions first, then the results it reports,
    then writes the host row. A daemon that locked results first and then the
    host_app_version (or host) of one of them would deadlock with such an RPC, and PostgreSQL
    would abort one of the two; locking these first makes the daemon take the RPC's order and
    wait for it instead. Nothing to do on SQLite, whose transactions hold the write lock from
    BEGIN.
    """
    if workunit_ids and connection.features.has_select_for_update:
        host_app_versions_lock_for_results(workunit_ids, where, params)
