"""The transitioner (BOINC sched/transitioner.cpp): move workunits whose transition_time has come.

One pass:

1. Pick up to ``limit`` workunits of the project with transition_time <= now, oldest first.
2. Claim each with a conditional UPDATE of transition_time to a short lease (now + 10 min):
   a workunit another worker claimed first no longer matches and is skipped, and one whose
   worker died is picked up again when the lease runs out.
3. In one transaction per workunit: lock the host_app_versions of results past their
   deadline (a scheduler RPC's lock order), then its results (id order, as the validator
   does), read them and the workunit as snapshots and ``plan_transition``
   (apps.work.domain.transitions).
4. Apply the plan with conditional updates: time out results (the host_app_version takes a
   TIMEOUT through the credit service), withdraw unneeded unsent ones, mark NO_CHECK, create
   new results with ``result_create``, set error bits, need_validate, assimilation and
   file-deletion readiness.
5. Write the next transition_time only if the lease is still there; a report or a send in
   the meantime lowered it, and that earlier time wins.

Applying a plan and planning again gives an empty plan, so a second pass changes nothing.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, DateTimeField, F, PositiveSmallIntegerField, Value, When

from apps.core import clock
from apps.core.db import WriteBatch, array_literal
from apps.credit.domain.quota import JobOutcome
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
from apps.work.services.create import result_create
from apps.work.services.host_outcomes import host_app_versions_lock_before_results, results_record_outcome

logger = logging.getLogger(__name__)

CLAIM_LEASE = timedelta(minutes=10)
# BOINC pushes a backlogged workunit 2 * lag later, within these bounds.
BACKLOG_MIN_SECONDS = 60
BACKLOG_MAX_SECONDS = 86400
_PLANNING_SENTINEL = -1  # a transition_time no plan can keep, so every plan states the next one


@dataclass(frozen=True, slots=True)
class TransitionOutcome:
    """What happened to one workunit (for counts and tests)."""

    workunit_id: int
    changed: bool
    timed_out: int = 0
    created: int = 0


def workunits_transition(
    *, project: Project, now: datetime | None = None, limit: int | None = None
) -> DaemonPass:
    """One transitioner pass over the project's due workunits (steps in the module doc)."""
    now = now or clock.now()
    limit = limit or settings.COBBLESTONE_DAEMON_BATCH
    due = list(
        Workunit.objects.filter(project=project, transition_time__lte=now)
        .order_by("transition_time", "id")
        .values_list("id", "transition_time")[:limit]
    )
    changed = errors = 0
    for wu_id, old_time in due:
        lease = _claim(wu_id, old_time, now)
        if lease is None:
            continue
        try:
            outcome = workunit_transition(workunit_id=wu_id, now=now, lease=lease, lag=now - old_time)
        except Exception:
            # The lease runs out and the next pass retries; the transaction left nothing half done.
            logger.exception("transitioner: workunit %s failed", wu_id)
            errors += 1
            continue
        changed += outcome.changed
    return DaemonPass(items=changed, errors=errors, message=f"{len(due)} due")


def _claim(wu_id: int, old_time: datetime, now: datetime) -> datetime | None:
    # Microseconds from the claim make the lease value this worker's own.
    lease = now + CLAIM_LEASE + timedelta(microseconds=clock.now().microsecond)
    claimed = Workunit.objects.filter(id=wu_id, transition_time=old_time).update(transition_time=lease)
    return lease if claimed else None


def workunit_transition(
    *, workunit_id: int, now: datetime, lease: datetime | None = None, lag: timedelta | None = None
) -> TransitionOutcome:
    """Plan and apply one workunit's transition; ``lease`` is the claimed transition_time."""
    with transaction.atomic():
        # Results past their deadline may time out, which judges their hosts: those
        # host_app_versions are locked first, in a scheduler RPC's order (the helper's doc).
        host_app_versions_lock_before_results(
            workunit_id,
            "r.server_state = %s AND r.report_deadline < %s",
            [int(ServerState.IN_PROGRESS), now],
        )
        rows = list(Result.objects.select_for_update().filter(workunit_id=workunit_id).order_by("id"))
        wu = Workunit.objects.select_related("project").get(id=workunit_id)
        grace = wu.project.report_grace_period
        config = TransitionConfig(delete_delay=wu.project.delete_delay_hours * 3600)
        plan = plan_transition(
            workunit_snapshot(wu),
            [result_snapshot(r, grace) for r in rows],
            now=now.timestamp(),
            config=config,
        )
        timed_out = _apply_results(wu, rows, plan, now)
        created = _create_results(wu, plan)
        _apply_workunit(wu, plan, now, lease, lag or timedelta(0))
    changed = not _is_only_time(plan)
    return TransitionOutcome(workunit_id, changed, timed_out=timed_out, created=created)


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


def _apply_results(wu: Workunit, rows: list[Result], plan: TransitionPlan, now: datetime) -> int:
    timed_out_ids = set(plan.timed_out_result_ids)
    timed_out = [r for r in rows if r.id in timed_out_ids]
    if timed_out:
        Result.objects.filter(id__in=[r.id for r in timed_out], server_state=ServerState.IN_PROGRESS).update(
            server_state=ServerState.OVER, outcome=Outcome.NO_REPLY
        )
        results_record_outcome(timed_out, outcome=JobOutcome.TIMEOUT, delay_bound=wu.delay_bound, now=now)
    if plan.didnt_need_result_ids:
        # INACTIVE results (sequence steps not yet released) are withdrawn like unsent ones.
        Result.objects.filter(
            id__in=plan.didnt_need_result_ids, server_state__in=[ServerState.UNSENT, ServerState.INACTIVE]
        ).update(server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    if plan.no_check_result_ids:
        Result.objects.filter(
            id__in=plan.no_check_result_ids,
            validate_state__in=[ValidateState.INIT, ValidateState.INCONCLUSIVE],
        ).update(validate_state=ValidateState.NO_CHECK)
    if plan.file_delete_ready_result_ids:
        Result.objects.filter(
            id__in=plan.file_delete_ready_result_ids, file_delete_state=FileDeleteState.INIT
        ).update(file_delete_state=FileDeleteState.READY)
    return len(timed_out)


def _create_results(wu: Workunit, plan: TransitionPlan) -> int:
    if plan.priority is not None:
        wu.priority = plan.priority  # the new results inherit the boosted priority
    for name in plan.new_result_names:
        result_create(workunit=wu, name=name)
    return len(plan.new_result_names)


def _apply_workunit(
    wu: Workunit, plan: TransitionPlan, now: datetime, lease: datetime | None, lag: timedelta
) -> None:
    changes: dict[str, object] = {"transition_time": _next_time(plan, now, lease, lag)}
    if plan.error_mask_set:
        changes["error_mask"] = F("error_mask").bitor(int(plan.error_mask_set))
    if plan.set_need_validate:
        changes["need_validate"] = True
    if plan.assimilate_ready:
        # Only from INIT: the validator and assimilator may have moved it on meanwhile.
        changes["assimilate_state"] = _from_init("assimilate_state", AssimilateState.READY)
    if plan.workunit_file_delete_ready:
        changes["file_delete_state"] = _from_init("file_delete_state", FileDeleteState.READY)
    if plan.reset_hr:
        changes["app_version"] = None
    if plan.priority is not None:
        changes["priority"] = plan.priority
    Workunit.objects.filter(id=wu.id).update(**changes)


def _from_init(field: str, new: int) -> Case:
    return Case(
        When(**{field: 0}, then=Value(int(new))), default=F(field), output_field=PositiveSmallIntegerField()
    )


def _next_time(plan: TransitionPlan, now: datetime, lease: datetime | None, lag: timedelta) -> object:
    when = plan.transition_time if plan.transition_time is not None else TRANSITION_NEVER
    if when >= TRANSITION_NEVER:
        target: datetime | None = None
    else:
        target = clock.from_unix(when)
        if target < now:
            # A backlog: look again 2 * lag later (BOINC), not in a tight loop.
            push = min(max(2 * lag.total_seconds(), BACKLOG_MIN_SECONDS), BACKLOG_MAX_SECONDS)
            target = now + timedelta(seconds=math.ceil(push))
    if lease is None:
        return target
    # A report or a send since the claim lowered transition_time: that time stands.
    return Case(
        When(transition_time=lease, then=Value(target, output_field=DateTimeField())),
        default=F("transition_time"),
        output_field=DateTimeField(),
    )


def _is_only_time(plan: TransitionPlan) -> bool:
    """A plan that only reschedules the workunit (nothing observable changed)."""
    return (
        plan.is_empty
        or TransitionPlan(workunit_id=plan.workunit_id, transition_time=plan.transition_time) == plan
    )


def transition_times_lower(times: Mapping[int, datetime], *, batch: WriteBatch | None = None) -> None:
    """Bring each workunit's transition time forward to its given time (never push it back).

    One statement on PostgreSQL (the pairs travel as two arrays), one per workunit elsewhere;
    with ``batch`` it waits there until ``batch.flush()``.
    """
    if not times:
        return
    field = Workunit._meta.get_field("transition_time")
    ids = list(times)
    stamps = [field.get_db_prep_save(times[i], connection) for i in ids]
    target = batch if batch is not None else WriteBatch()
    if connection.vendor == "postgresql":
        target.add(
            "UPDATE work_workunit w SET transition_time = v.t"
            " FROM unnest(%s::bigint[], %s::timestamptz[]) AS v(id, t)"
            " WHERE w.id = v.id AND (w.transition_time IS NULL OR w.transition_time > v.t)",
            [array_literal(ids), array_literal(stamps)],
            table=Workunit._meta.db_table,
            keys=frozenset(ids),
        )
    else:
        target.add_many(
            "UPDATE work_workunit SET transition_time = %s"
            " WHERE id = %s AND (transition_time IS NULL OR transition_time > %s)",
            [(stamp, i, stamp) for i, stamp in zip(ids, stamps, strict=True)],
        )
    if batch is None:
        target.flush()
