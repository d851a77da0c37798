"""Judge the hosts of some results (timeout, invalid) in their host_app_version records."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from django.db import connection

from apps.applications.models import App
from apps.core.db import any_of, fetch_rows
from apps.credit.domain.quota import JobOutcome
from apps.credit.services import HostOutcome, host_app_versions_record_outcomes
from apps.hosts.models import HostAppVersion
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


def _judged_host_app_versions_sql(where: str, workunits: str) -> str:
    """A SELECT locking, in id order, the host_app_versions of the results that match
    ``workunits`` and ``where`` (SQL on alias ``r``), parameters in that order."""
    quote = connection.ops.quote_name
    # The results first, then their hosts' rows through the host_id index: joined directly,
    # the planner can hash the whole host_app_version table for a handful of hosts.
    return (
        "WITH r AS MATERIALIZED (SELECT r.host_id, r.app_id, r.app_version_id, r.anonymous_proc_type "
        f"FROM {quote(Result._meta.db_table)} r WHERE {workunits} AND ({where})) "
        f"SELECT h.id FROM {quote(HostAppVersion._meta.db_table)} h JOIN r ON r.host_id = h.host_id AND ("
        "h.app_version_id = r.app_version_id OR (r.app_version_id IS NULL AND h.app_version_id IS NULL"
        " AND h.app_id = r.app_id AND h.anonymous_proc_type = r.anonymous_proc_type)) "
        "WHERE h.host_id = ANY(ARRAY(SELECT r.host_id FROM r)) ORDER BY h.id FOR UPDATE OF h"
    )


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
        workunits, workunit_params = any_of("r.workunit_id", list(workunit_ids), "bigint")
        fetch_rows(_judged_host_app_versions_sql(where, workunits), [*workunit_params, *params])
