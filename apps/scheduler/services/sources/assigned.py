"""Targeted and broadcast jobs (BOINC's assigned jobs), tried before any other source.

A targeted job has no result until its target asks: this source makes one when the host
is the target (or one of the target user's or team's hosts), the job still needs one (as
the transitioner counts), and the host has none of it yet. A broadcast job gets one result
per eligible host, made when that host asks. Nothing else sends these jobs: the ordinary
sources only send results that exist and are UNSENT, and these are made already sent.

A result is made only once the host takes it (the Dispatcher's checks passed), so a host
that cannot run the job leaves nothing behind for another host to pick up.
"""

from __future__ import annotations

import logging

from django.db import connection

from apps.core.db import ModelColumns, execute, fetch_rows, placeholders
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.dispatch import CANDIDATE_WORKUNIT_FIELDS, Dispatcher
from apps.work.domain.assignments import (
    ResultState,
    TargetType,
    broadcast_result_name,
    next_result_name,
    targeted_instance_needed,
)
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit
from apps.work.services.create import results_create

logger = logging.getLogger(__name__)

# Assignments looked at per RPC (a host rarely is the target of more at once; the rest wait
# for its next request).
ASSIGNMENTS_PER_RPC = 64

# What a send and the reply read, and what making the job's result needs.
_WORKUNIT = ModelColumns(
    Workunit, "w", (*CANDIDATE_WORKUNIT_FIELDS, "priority", "target_nresults", "output_files")
)


def send_assigned_work(dispatcher: Dispatcher) -> None:
    """Send this host the targeted and broadcast jobs meant for it (none: no query at all)."""
    ctx = dispatcher.ctx
    if not project_catalog(ctx.project).has_assignments:
        return
    multi_of = _assigned_to_host(dispatcher)
    if not multi_of:
        return
    workunits = _lock_workunits(sorted(multi_of))
    dispatcher.load_exclusions(set(workunits), host_checked=True)
    targeted = [wu_id for wu_id in workunits if not multi_of[wu_id]]
    results = _results_of(targeted) if targeted else {}
    host = ctx.host
    assert host is not None
    for wu_id in sorted(workunits, key=lambda i: (-workunits[i].priority, i)):
        if not dispatcher.need.work_needed():
            return
        wu = workunits[wu_id]
        if multi_of[wu_id]:
            name = broadcast_result_name(wu.name, host.id)
        else:
            states = results.get(wu_id, [])
            if not targeted_instance_needed(wu.target_nresults, (s for _, s in states)):
                continue
            name = next_result_name(wu.name, (n for n, _ in states))
        result = Result(
            project_id=wu.project_id,
            app_id=wu.app_id,
            workunit=wu,
            name=name,
            priority=wu.priority,
            server_state=ServerState.UNSENT,
        )
        if dispatcher.try_send(result):
            # The row is written only now; the send's own fields follow with the others.
            (result.id,) = results_create(
                new=[(wu, name)],
                server_state=ServerState.INACTIVE,
                upload_keys={ctx.project.id: ctx.project.upload_private_key},
                batch=ctx.writes,
            )


def _assigned_to_host(dispatcher: Dispatcher) -> dict[int, bool]:
    """The workunits assigned to this host, its user or team, or to all hosts, that the host
    has no result of and that are still open: workunit id -> broadcast. Assignments whose
    workunit was purged are dropped, as BOINC drops them."""
    ctx = dispatcher.ctx
    host, account = ctx.host, ctx.account
    assert host is not None
    assert account is not None
    rows = fetch_rows(
        "SELECT a.id, a.workunit_id, a.multi, w.id FROM work_assignment a"
        " LEFT JOIN work_workunit w ON w.id = a.workunit_id"
        f" WHERE a.project_id = %s AND (a.target_type = {int(TargetType.NONE)}"
        f" OR (a.target_type = {int(TargetType.HOST)} AND a.target_id = %s)"
        f" OR (a.target_type = {int(TargetType.USER)} AND a.target_id = %s)"
        f" OR (a.target_type = {int(TargetType.TEAM)} AND a.target_id = %s))"
        " AND (w.id IS NULL OR (w.error_mask = 0 AND w.canonical_result_id IS NULL AND NOT w.need_validate"
        " AND NOT EXISTS (SELECT 1 FROM work_result r WHERE r.workunit_id = w.id AND r.host_id = %s)))"
        f" ORDER BY a.id LIMIT {ASSIGNMENTS_PER_RPC}",
        [ctx.project.id, host.id, account.id, account.team_id or 0, host.id],
    )
    orphans = [row[0] for row in rows if row[3] is None]
    if orphans:
        execute(f"DELETE FROM work_assignment WHERE id IN ({placeholders(orphans)})", orphans)
    return {wu_id: bool(multi) for _id, wu_id, multi, found in rows if found is not None}


def _lock_workunits(ids: list[int]) -> dict[int, Workunit]:
    """The workunits, each locked while its new result is made (two hosts of one user or team
    must not both take a job's last needed result); one another RPC holds is skipped."""
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    rows = fetch_rows(
        f"SELECT {_WORKUNIT.sql()} FROM work_workunit w WHERE w.id IN ({placeholders(ids)}) ORDER BY w.id{lock}",
        ids,
    )
    return {wu.id: wu for wu in (_WORKUNIT.build(row) for row in rows)}


def _results_of(ids: list[int]) -> dict[int, list[tuple[str, ResultState]]]:
    rows = fetch_rows(
        "SELECT workunit_id, name, server_state, outcome, validate_state FROM work_result"
        f" WHERE workunit_id IN ({placeholders(ids)})",
        ids,
    )
    found: dict[int, list[tuple[str, ResultState]]] = {}
    for wu_id, name, server_state, outcome, validate_state in rows:
        found.setdefault(wu_id, []).append((name, ResultState(server_state, outcome, validate_state)))
    return found
