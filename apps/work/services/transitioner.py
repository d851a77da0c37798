"""The transitioner (BOINC sched/transitioner.cpp): move workunits whose transition_time has come.

One pass, in batches of up to ``CLAIM_BATCH`` workunits until ``limit`` are handled:

1. Claim the project's due workunits (transition_time <= now), oldest first, by setting
   their transition_time to a short lease (apps.work.services.claims) in one statement: on
   PostgreSQL the due rows are picked ``FOR UPDATE SKIP LOCKED``, so concurrent workers
   claim disjoint batches; a workunit another worker claimed first is no longer due.
2. In one transaction per batch: lock the host_app_versions of results past their
   deadline (a scheduler RPC's lock order), then the batch's results (id order, as the
   validator locks a workunit's), read them and the workunits (with their projects'
   grace period and delete delay) in one statement each, and ``plan_transition`` each
   workunit (apps.work.domain.transitions).
3. Apply the plans, each table written once for the whole batch: the results' new states
   (timed out, withdrawn unneeded, NO_CHECK, file-deletion ready) in one statement, read
   under the lock, so the states written are the planned ones; the hosts of timed-out
   results take a TIMEOUT through the credit service; new results and their output files
   in one INSERT each (``results_create``); the workunits' error bits, need_validate,
   assimilation and file-deletion readiness, homogeneous version, priority and next
   transition_time in one UPDATE.
4. The next transition_time is written only where the lease is still there; a report or
   a send in the meantime lowered it, and that earlier time wins.

A batch that fails is rolled back and its workunits are tried again one by one, each in
its own transaction, so one failing workunit holds up only itself (until its lease runs
out and a pass tries it again). A pass that loses its database connection stops; the
workunits it had claimed and not handled are released at the process's next pass
(apps.work.services.claims), or by their lease if the process died.

Applying a plan and planning again gives an empty plan, so a second pass changes nothing.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from apps.core import clock
from apps.core.db import (
    ModelColumns,
    WriteBatch,
    db_datetime,
    update_rows,
)
from apps.credit.domain.quota import JobOutcome
from apps.credit.services import HostOutcome, host_app_versions_record_outcomes
from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.work.domain.states import (
    TRANSITION_NEVER,
    AssimilateState,
    ClientState,
    ErrorMask,
    FileDeleteState,
    Outcome,
    ServerState,
    ValidateState,
)
from apps.work.domain.transitions import (
    ResultSnapshot,
    TransitionConfig,
    TransitionPlan,
    WorkunitSnapshot,
    plan_transition,
)
from apps.work.models import Result, Workunit
from apps.work.queries import (
    results_of_workunits_locked,
    workunits_claim_due,
    workunits_transition_apply,
    workunits_with_transition_settings,
)
from apps.work.services.batch_tails import batch_tails_accelerate
from apps.work.services.claims import CLAIM_LEASE as CLAIM_LEASE
from apps.work.services.claims import (
    LeaseClock,
    TimeClaim,
    batch_run,
    claims_abandon,
    claims_release,
    lease_until,
    transition_claims_release,
)
from apps.work.services.create import results_create
from apps.work.services.host_outcomes import host_app_versions_lock_for_workunits, host_outcomes

logger = logging.getLogger(__name__)

# Workunits claimed and handled together: one transaction, a few statements per table.
CLAIM_BATCH = 200
# BOINC pushes a backlogged workunit 2 * lag later, within these bounds.
BACKLOG_MIN_SECONDS = 60
BACKLOG_MAX_SECONDS = 86400
_PLANNING_SENTINEL = -1  # a transition_time no plan can keep, so every plan states the next one

# What the plans read and change: the statements run for every batch are written by hand
# (apps.work.queries), the ORM costing more than the SQL.
_RESULT = ModelColumns(
    Result,
    "r",
    [
        "id",
        "workunit",
        "name",
        "server_state",
        "outcome",
        "validate_state",
        "client_state",
        "exit_status",
        "report_deadline",
        "received_time",
        "file_delete_state",
        # For the credit service, when the result times out.
        "host",
        "app",
        "app_version",
        "anonymous_proc_type",
    ],
)
RESULT_FIELDS = ["server_state", "outcome", "validate_state", "file_delete_state"]
_WORKUNIT = ModelColumns(
    Workunit,
    "w",
    [
        "id",
        "name",
        "min_quorum",
        "target_nresults",
        "max_error_results",
        "max_total_results",
        "max_success_results",
        "delay_bound",
        "error_mask",
        "canonical_result",
        "assimilate_state",
        "file_delete_state",
        "need_validate",
        "app_version",
        "hr_class",
        "priority",
        "transitioner_flags",
        # For the new results.
        "project",
        "app",
        "output_files",
    ],
)


@dataclass(frozen=True, slots=True)
class TransitionOutcome:
    """What happened to one workunit (for counts and tests)."""

    workunit_id: int
    changed: bool
    timed_out: int = 0
    created: int = 0


@dataclass(frozen=True, slots=True)
class Claim:
    """A workunit to transition: ``lease`` is the transition_time its claim wrote (None: no
    claim, the next time is written whatever is there), ``lag`` how late it was."""

    workunit_id: int
    lease: datetime | None = None
    lag: timedelta = timedelta(0)


def workunits_transition(
    *, project: Project, now: datetime | None = None, limit: int | None = None
) -> DaemonPass:
    """One transitioner pass over the project's due workunits (steps in the module doc)."""
    now = now or clock.now()
    claims_release("transitioner", transition_claims_release)
    at = LeaseClock(now)
    remaining = limit or settings.COBBLESTONE_DAEMON_BATCH
    claimed = changed = errors = 0
    while remaining > 0:
        size = min(CLAIM_BATCH, remaining)
        # Each batch is claimed just before it is handled, so its lease is all its own.
        claims = _claim_due(project.id, now, size, lease_until(at()))
        claimed += len(claims)
        remaining -= len(claims)
        if not claims:
            break
        done = batch_run("transitioner", claims, lambda c: workunits_transition_batch(c, now), _name)
        changed += sum(o.changed for outcomes in done.results for o in outcomes)
        errors += len(done.failed) + len(done.abandoned)
        if done.abandoned:
            # The database is away: the next pass releases these once it answers again.
            claims_abandon(
                "transitioner",
                [TimeClaim(c.workunit_id, c.lease, now - c.lag) for c in done.abandoned],  # type: ignore[arg-type]  # claims made here carry their lease
            )
            break
        if len(claims) < size:
            break
    raised = batch_tails_accelerate(project=project)
    message = f"{claimed} due" + (f", {raised} batch-tail results raised" if raised else "")
    return DaemonPass(items=changed, errors=errors, message=message)


def _name(claim: Claim) -> str:
    return f"workunit {claim.workunit_id}"


def _claim_due(project_id: int, now: datetime, size: int, lease: datetime | None = None) -> list[Claim]:
    """Claim up to ``size`` of the project's due workunits, oldest first (step 1); ``lease``:
    the transition time the claim writes (default: a lease from ``now``)."""
    lease = lease or lease_until(now)
    rows = workunits_claim_due(project_id, now, size, lease)
    return [Claim(wu_id, lease, now - old_time) for wu_id, old_time in rows]


def workunit_transition(
    *, workunit_id: int, now: datetime, lease: datetime | None = None, lag: timedelta | None = None
) -> TransitionOutcome:
    """Plan and apply one workunit's transition (a batch of one); ``lease`` is the claimed
    transition_time."""
    outcomes = workunits_transition_batch([Claim(workunit_id, lease, lag or timedelta(0))], now)
    if not outcomes:
        raise Workunit.DoesNotExist(f"workunit {workunit_id} does not exist")
    return outcomes[0]


def workunits_transition_batch(claims: Sequence[Claim], now: datetime) -> list[TransitionOutcome]:
    """Plan and apply the transitions of several workunits in one transaction (steps 2-4);
    workunits that no longer exist are left out of the outcomes."""
    if not claims:
        return []
    by_id = {c.workunit_id: c for c in claims}
    ids = sorted(by_id)
    unix_now = now.timestamp()
    with transaction.atomic():
        # Results past their deadline may time out, which judges their hosts: those
        # host_app_versions are locked first, in a scheduler RPC's order (the helper's doc).
        host_app_versions_lock_for_workunits(
            ids, "r.server_state = %s AND r.report_deadline < %s", [int(ServerState.IN_PROGRESS), now]
        )
        results = _locked_results(ids)
        plans = []
        for wu, config, grace in _workunits(ids):
            rows = results.get(wu.id, [])
            snapshots = [result_snapshot(r, grace) for r in rows]
            plans.append(
                (wu, rows, plan_transition(workunit_snapshot(wu), snapshots, now=unix_now, config=config))
            )
        # Nothing below reads what these write: they wait in ``writes`` and go together.
        writes = WriteBatch()
        _apply_results(plans, now, writes)
        _create_results(plans, writes)
        _apply_workunits(plans, by_id, now, writes)
        writes.flush()
    return [
        TransitionOutcome(
            wu.id,
            not _is_only_time(plan),
            timed_out=len(plan.timed_out_result_ids),
            created=plan.n_new_results,
        )
        for wu, _rows, plan in plans
    ]


def _locked_results(workunit_ids: list[int]) -> dict[int, list[Result]]:
    """The workunits' results by workunit, locked FOR UPDATE in id order (SQLite has no row
    locks: its IMMEDIATE transactions hold the database's write lock)."""
    by_workunit: dict[int, list[Result]] = {}
    for result in results_of_workunits_locked(workunit_ids, _RESULT):
        by_workunit.setdefault(result.workunit_id, []).append(result)
    return by_workunit


def _workunits(workunit_ids: list[int]) -> list[tuple[Workunit, TransitionConfig, int]]:
    """The workunits in id order, each with its project's settings: (workunit, config, grace
    period in seconds)."""
    configs: dict[tuple[float, int, int], TransitionConfig] = {}
    found = []
    for wu, grace, delay_hours, on_over, on_over_except_error in workunits_with_transition_settings(
        workunit_ids, _WORKUNIT
    ):
        key = (delay_hours, on_over, on_over_except_error)
        config = configs.get(key)
        if config is None:
            config = configs[key] = TransitionConfig(
                delete_delay=delay_hours * 3600,
                reliable_priority_on_over=on_over,
                reliable_priority_on_over_except_error=on_over_except_error,
            )
        found.append((wu, config, grace))
    return found


def workunit_snapshot(wu: Workunit) -> WorkunitSnapshot:
    return WorkunitSnapshot(
        id=wu.id,
        name=wu.name,
        min_quorum=wu.min_quorum,
        target_nresults=wu.target_nresults,
        max_error_results=wu.max_error_results,
        max_total_results=wu.max_total_results,
        max_success_results=wu.max_success_results,
        delay_bound=wu.delay_bound,
        error_mask=ErrorMask(wu.error_mask),
        canonical_result_id=wu.canonical_result_id,
        assimilate_state=AssimilateState(wu.assimilate_state),
        file_delete_state=FileDeleteState(wu.file_delete_state),
        need_validate=wu.need_validate,
        transition_time=_PLANNING_SENTINEL,
        hr_class=wu.hr_class,
        app_version_id=wu.app_version_id or 0,
        priority=wu.priority,
        transitioner_flags=wu.transitioner_flags,
    )


def result_snapshot(r: Result, grace_seconds: float) -> ResultSnapshot:
    """report_deadline with the project's grace period: time-outs are judged after it."""
    deadline = r.report_deadline.timestamp() + grace_seconds if r.report_deadline else 0.0
    return ResultSnapshot(
        id=r.id,
        name=r.name,
        server_state=ServerState(r.server_state),
        outcome=Outcome(r.outcome),
        validate_state=ValidateState(r.validate_state),
        client_state=ClientState(r.client_state),
        exit_status=r.exit_status,
        report_deadline=deadline,
        received_time=r.received_time.timestamp() if r.received_time else 0.0,
        file_delete_state=FileDeleteState(r.file_delete_state),
    )


_Planned = Sequence[tuple[Workunit, list[Result], TransitionPlan]]


def _apply_results(plans: _Planned, now: datetime, writes: WriteBatch) -> None:
    """The results' new states, in one statement for the batch (in ``writes``); the hosts of
    timed-out results judged.

    The rows were read under lock in this transaction, so the plan's preconditions (in
    progress, unsent or inactive, unchecked, files not yet READY) still hold and the states
    are written as planned.
    """
    changed: dict[int, Result] = {}
    timed_out: list[HostOutcome] = []
    for wu, rows, plan in plans:
        if not (
            plan.timed_out_result_ids
            or plan.didnt_need_result_ids
            or plan.no_check_result_ids
            or plan.file_delete_ready_result_ids
        ):
            continue
        by_id = {r.id: r for r in rows}
        for rid in plan.timed_out_result_ids:
            r = changed[rid] = by_id[rid]
            r.server_state, r.outcome = int(ServerState.OVER), int(Outcome.NO_REPLY)
            timed_out += host_outcomes([r], outcome=JobOutcome.TIMEOUT, delay_bound=wu.delay_bound)
        for rid in plan.didnt_need_result_ids:
            # INACTIVE results (sequence steps not yet released) are withdrawn like unsent ones.
            r = changed[rid] = by_id[rid]
            r.server_state, r.outcome = int(ServerState.OVER), int(Outcome.DIDNT_NEED)
        for rid in plan.no_check_result_ids:
            r = changed[rid] = by_id[rid]
            r.validate_state = int(ValidateState.NO_CHECK)
        for rid in plan.file_delete_ready_result_ids:
            r = changed[rid] = by_id[rid]
            r.file_delete_state = int(FileDeleteState.READY)
    update_rows(Result, [changed[rid] for rid in sorted(changed)], RESULT_FIELDS, batch=writes)
    # One call for the batch; each outcome carries its own job's delay bound (the turnaround
    # average takes the delay bound of the job that timed out).
    host_app_versions_record_outcomes(outcomes=timed_out, now=now)


def _create_results(plans: _Planned, writes: WriteBatch) -> None:
    """The new results in one INSERT, their output files in another (in ``writes``)."""
    new: list[tuple[Workunit, str]] = []
    for wu, _rows, plan in plans:
        if plan.priority is not None:
            wu.priority = plan.priority  # the new results inherit the boosted priority
        new += [(wu, name) for name in plan.new_result_names]
    results_create(new=new, batch=writes)


def _apply_workunits(plans: _Planned, claims: Mapping[int, Claim], now: datetime, writes: WriteBatch) -> None:
    """Every workunit's new fields and next transition_time, in one statement (in ``writes``).

    The workunit rows are not locked (the validator, the assimilator and the scheduler write
    them meanwhile), so each change is relative to what is there: error bits are OR-ed in,
    need_validate only set, assimilation and file deletion only moved on from INIT, and the
    next transition_time written only over this claim's lease.
    """
    if not plans:
        return
    rows = [
        (
            wu.id,
            db_datetime(claims[wu.id].lease),
            db_datetime(_next_time(plan, now, claims[wu.id].lag)),
            int(plan.error_mask_set),
            plan.set_need_validate,
            plan.assimilate_ready,
            plan.workunit_file_delete_ready,
            plan.reset_hr,
            plan.priority,
        )
        for wu, _rows, plan in plans
    ]
    workunits_transition_apply(rows, writes)


def _next_time(plan: TransitionPlan, now: datetime, lag: timedelta) -> datetime | None:
    """The plan's next transition time (None: never), a backlog pushed 2 * lag later."""
    when = plan.transition_time if plan.transition_time is not None else TRANSITION_NEVER
    if when >= TRANSITION_NEVER:
        return None
    target = clock.from_unix(when)
    if target < now:
        # A backlog: look again 2 * lag later (BOINC), not in a tight loop.
        push = min(max(2 * lag.total_seconds(), BACKLOG_MIN_SECONDS), BACKLOG_MAX_SECONDS)
        target = now + timedelta(seconds=math.ceil(push))
    return target


def _is_only_time(plan: TransitionPlan) -> bool:
    """A plan that only reschedules the workunit (nothing observable changed)."""
    return (
        plan.is_empty
        or TransitionPlan(workunit_id=plan.workunit_id, transition_time=plan.transition_time) == plan
    )
