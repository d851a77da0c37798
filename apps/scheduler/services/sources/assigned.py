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

from apps.core.db import ModelColumns, advisory_xact_lock
from apps.scheduler.queries import (
    assignments_delete,
    assignments_for_host,
    result_states_of_workunits,
    workunits_by_id,
    workunits_with_results_on_host,
)
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.dispatch import CANDIDATE_WORKUNIT_FIELDS, Dispatcher
from apps.work.domain.assignments import (
    ResultState,
    broadcast_result_name,
    next_result_name,
    targeted_instance_needed,
)
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit
from apps.work.services.create import results_create

# Open assignments looked at per RPC (the rest wait for the host's next request), and
# targeted workunits locked at a time.
ASSIGNMENTS_PER_RPC = 64
LOCK_WINDOW = 8

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
    targeted = [wu_id for wu_id, multi in multi_of.items() if not multi]  # in assignment order
    # A few targeted workunits locked at a time: concurrent hosts of one user or team then
    # share the jobs instead of one holding locks on more than it takes.
    for start in range(0, len(targeted), LOCK_WINDOW):
        if not dispatcher.need.work_needed():
            return
        _send(dispatcher, _workunits(sorted(targeted[start : start + LOCK_WINDOW]), lock=True), multi_of)
    broadcast = [wu_id for wu_id, multi in multi_of.items() if multi]
    if broadcast and dispatcher.need.work_needed():
        _send(dispatcher, _workunits(_broadcast_not_on_host(dispatcher, broadcast), lock=False), multi_of)


def _broadcast_not_on_host(dispatcher: Dispatcher, ids: list[int]) -> list[int]:
    """Of broadcast workunits ``ids``, those the host still has no result of, read again
    under a lock on the host: hosts do not wait for each other on a broadcast job (each
    gets its own result), but two RPCs of one host must not both make its result."""
    host = dispatcher.ctx.host
    assert host is not None
    advisory_xact_lock(f"scheduler.host:{host.id}")
    have = workunits_with_results_on_host(host.id, ids)
    return sorted(set(ids) - have)


def _send(dispatcher: Dispatcher, workunits: dict[int, Workunit], multi_of: dict[int, bool]) -> None:
    ctx = dispatcher.ctx
    host = ctx.host
    assert host is not None
    dispatcher.load_exclusions(set(workunits), host_checked=True)
    targeted = [wu_id for wu_id in workunits if not multi_of[wu_id]]
    results = _results_of(targeted) if targeted else {}
    for wu_id in sorted(workunits, key=lambda i: (-workunits[i].priority, i)):
        if not dispatcher.need.work_needed():
            return
        wu = workunits[wu_id]
        if multi_of[wu_id]:
            name = broadcast_result_name(wu.name, host.id)
        else:
            # Counted again under the lock: another RPC may have taken the job meanwhile.
            states = results.get(wu_id, [])
            if any(on_host == host.id for _, on_host, _ in states) or not targeted_instance_needed(
                wu.target_nresults, (s for _, _, s in states)
            ):
                continue
            name = next_result_name(wu.name, (n for n, _, _ in states))
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
    has no result of and that still need one: workunit id -> broadcast, in assignment order.
    Hand-written SQL, as the RPC's other queries (the ORM would spend longer building it,
    with its OR of targets and counting subquery, than the database running it). Assignments whose
    workunit was purged are dropped, as BOINC drops them."""
    ctx = dispatcher.ctx
    host, account = ctx.host, ctx.account
    assert host is not None
    assert account is not None
    rows = assignments_for_host(ctx.project.id, host.id, account.id, account.team_id, ASSIGNMENTS_PER_RPC)
    orphans = [row[0] for row in rows if row[3] is None]
    if orphans:
        assignments_delete(orphans)
    return {wu_id: bool(multi) for _id, wu_id, multi, found in rows if found is not None}


def _workunits(ids: list[int], *, lock: bool) -> dict[int, Workunit]:
    """The workunits; with ``lock``, each locked while its new result is made (two hosts of
    one user or team must not both take a job's last needed result), one that another RPC
    holds skipped."""
    if not ids:
        return {}
    return workunits_by_id(ids, _WORKUNIT, lock=lock)


def _results_of(ids: list[int]) -> dict[int, list[tuple[str, int | None, ResultState]]]:
    """Each workunit's results: (name, host id, state)."""
    rows = result_states_of_workunits(ids)
    found: dict[int, list[tuple[str, int | None, ResultState]]] = {}
    for wu_id, name, host_id, server_state, outcome, validate_state in rows:
        found.setdefault(wu_id, []).append(
            (name, host_id, ResultState(server_state, outcome, validate_state))
        )
    return found
