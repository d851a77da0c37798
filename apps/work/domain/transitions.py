"""The transitioner's decision for one workunit (BOINC sched/transitioner.cpp, ``handle_wu``).

``plan_transition`` looks at a workunit and all its results and returns a ``TransitionPlan``
saying what to change; it never writes. The transitioner service loads the rows (the results
locked), calls it, and applies the plan: the results' planned states, which the lock keeps
current, and the workunit's changes relative to what is there (bits OR-ed in, states moved on
only from INIT), since other daemons write the workunit meanwhile. ``apply_plan`` is the pure
reference applier: applying a plan and planning again at the same ``now`` gives an empty plan
(the property tests check this).

One pass, in order:

1. Time out IN_PROGRESS results whose (grace-inclusive) report_deadline has passed: OVER/NO_REPLY.
2. Count results by state. A CLIENT_ERROR with EXIT_ABORTED_VIA_GUI counts as no-reply, since the
   volunteer aborted it, not the application; INVALID successes are not successes.
3. Without a canonical result, set error bits: any COULDNT_SEND, too many errors, too many
   successes, and too many total results when more instances are needed than max_total_results
   allows (then none are created).
4. Without an error or canonical result, create ``target_nresults - unsent - in progress -
   successes`` new results named ``<wu>_<max suffix + 1>`` onwards, with the retry priority boost.
5. On an error: unsent results become OVER/DIDNT_NEED, unchecked successes NO_CHECK, and the
   workunit is handed to the assimilator. With a canonical result, leftover unsent results also
   become DIDNT_NEED (the validator does this at consensus; repeating it covers a crash between
   its writes).
6. Set need_validate when an unchecked success exists and successes reach min_quorum.
7. Deferred assimilation: canonical result, all results over, none waiting for validation.
8. Once assimilated and ``delete_delay`` after the latest report, mark files for deletion:
   reported results' outputs as BOINC does, and, once every result is over and checked, the
   uploads of results sent but never reported (timed out, detached, or withdrawn from a host).
9. Next transition_time: never (canonical or error) or a safety net, lowered to the earliest
   in-progress deadline and the deferred-delete time.

Differences from BOINC, on purpose: error bits are evaluated only while there is no canonical
result (a late error must not fail a validated workunit); the backlog push of transition_time is
left to the service, since every time computed here is at or after ``now``; results sent but never
reported get their files deleted too (BOINC leaves a timed-out host's uploads to its
antique_file_deleter, which this project does not have, so they would stay after db_purge).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from apps.work.domain.states import (
    EXIT_ABORTED_VIA_GUI,
    LATE_OUTCOMES,
    TRANSITION_NEVER,
    AssimilateState,
    ClientState,
    ErrorMask,
    FileDeleteState,
    Outcome,
    ServerState,
    ValidateState,
)

# workunit.transitioner_flags (db/boinc_db_types.h).
TRANSITION_FLAG_NONE = 1  # broadcast jobs: the scheduler makes the results
TRANSITION_FLAG_NO_NEW_RESULTS = 2  # targeted jobs and work-sequence steps

SAFETY_NET_MIN_SECONDS = 10 * 86400
_UNSENT_STATES = (ServerState.UNSENT, ServerState.INACTIVE)
_UNCHECKED = (ValidateState.INIT, ValidateState.INCONCLUSIVE)
_REPORTED_OUTCOMES = (Outcome.SUCCESS, Outcome.CLIENT_ERROR, Outcome.VALIDATE_ERROR)


@dataclass(frozen=True, slots=True)
class WorkunitSnapshot:
    """The workunit fields the transitioner reads (create_work defaults)."""

    id: int
    name: str
    min_quorum: int = 1
    target_nresults: int = 1
    max_error_results: int = 1
    max_total_results: int = 1
    max_success_results: int = 1
    delay_bound: float = 604800.0
    error_mask: ErrorMask = ErrorMask.NONE
    canonical_result_id: int | None = None
    assimilate_state: AssimilateState = AssimilateState.INIT
    file_delete_state: FileDeleteState = FileDeleteState.INIT
    need_validate: bool = False
    transition_time: int = 0
    hr_class: int = 0
    app_version_id: int = 0
    priority: int = 0
    transitioner_flags: int = 0

    @property
    def cancelled(self) -> bool:
        # Cancelling a workunit is setting this bit and transitioning it now, as BOINC does.
        return bool(self.error_mask & ErrorMask.CANCELLED)


@dataclass(frozen=True, slots=True)
class ResultSnapshot:
    """The result fields the transitioner reads; times are Unix seconds."""

    id: int
    name: str
    server_state: ServerState = ServerState.UNSENT
    outcome: Outcome = Outcome.INIT
    validate_state: ValidateState = ValidateState.INIT
    client_state: ClientState = ClientState.NEW
    exit_status: int = 0
    report_deadline: float = 0.0  # 0 until the scheduler sends it
    received_time: float = 0.0
    file_delete_state: FileDeleteState = FileDeleteState.INIT


@dataclass(frozen=True, slots=True)
class TransitionConfig:
    """Project settings the transitioner honours (config.xml names)."""

    delete_delay: float = 0.0  # seconds after the latest report before files may go
    hr_class_static: bool = False
    reliable_priority_on_over: int = 0
    reliable_priority_on_over_except_error: int = 0


@dataclass(frozen=True, slots=True)
class TransitionPlan:
    """What to change; empty tuples, ``False`` and ``None`` mean "leave as is"."""

    workunit_id: int
    timed_out_result_ids: tuple[int, ...] = ()  # IN_PROGRESS -> OVER/NO_REPLY
    didnt_need_result_ids: tuple[int, ...] = ()  # UNSENT/INACTIVE -> OVER/DIDNT_NEED
    no_check_result_ids: tuple[int, ...] = ()  # validate_state -> NO_CHECK
    file_delete_ready_result_ids: tuple[int, ...] = ()  # file_delete_state -> READY
    new_result_names: tuple[str, ...] = ()  # create UNSENT results with these names
    error_mask_set: ErrorMask = ErrorMask.NONE  # bits to OR into workunit.error_mask
    set_need_validate: bool = False
    assimilate_ready: bool = False
    workunit_file_delete_ready: bool = False
    reset_hr: bool = False  # hr_class and app_version_id -> 0
    priority: int | None = None
    transition_time: int | None = None

    @property
    def n_new_results(self) -> int:
        return len(self.new_result_names)

    @property
    def is_empty(self) -> bool:
        return self == TransitionPlan(workunit_id=self.workunit_id)


@dataclass(slots=True)
class _Tally:
    nunsent: int = 0
    ninprogress: int = 0
    nover: int = 0
    nsuccess: int = 0
    nerrors: int = 0
    nno_reply: int = 0
    ncouldnt_send: int = 0
    ntotal: int = 0
    new_success: bool = False


def _tally(results: Iterable[ResultSnapshot]) -> _Tally:
    t = _Tally()
    for r in results:
        t.ntotal += 1
        if r.server_state in _UNSENT_STATES:
            t.nunsent += 1
        elif r.server_state == ServerState.IN_PROGRESS:
            t.ninprogress += 1
        elif r.server_state == ServerState.OVER:
            t.nover += 1
            _tally_outcome(t, r)
    return t


def _tally_outcome(t: _Tally, r: ResultSnapshot) -> None:
    if r.outcome == Outcome.SUCCESS:
        if r.validate_state != ValidateState.INVALID:
            t.nsuccess += 1
        if r.validate_state == ValidateState.INIT:
            t.new_success = True
    elif r.outcome == Outcome.CLIENT_ERROR and r.exit_status == EXIT_ABORTED_VIA_GUI:
        t.nno_reply += 1  # the volunteer aborted it: not the application's fault
    elif r.outcome in (Outcome.CLIENT_ERROR, Outcome.VALIDATE_ERROR):
        t.nerrors += 1
    elif r.outcome in (Outcome.NO_REPLY, Outcome.CLIENT_DETACHED):
        t.nno_reply += 1
    elif r.outcome == Outcome.COULDNT_SEND:
        t.ncouldnt_send += 1


def next_result_names(wu_name: str, results: Iterable[ResultSnapshot], count: int) -> tuple[str, ...]:
    """``<wu>_<n>`` names continuing after the highest numeric suffix (the first is ``_0``)."""
    prefix = wu_name + "_"
    top = -1
    for r in results:
        tail = r.name[len(prefix) :] if r.name.startswith(prefix) else ""
        if tail.isascii() and tail.isdigit():
            top = max(top, int(tail))
    return tuple(f"{prefix}{top + 1 + i}" for i in range(count))


def _error_bits(wu: WorkunitSnapshot, t: _Tally) -> ErrorMask:
    bits = ErrorMask.NONE
    if t.ncouldnt_send:
        bits |= ErrorMask.COULDNT_SEND_RESULT
    if t.nerrors > wu.max_error_results:
        bits |= ErrorMask.TOO_MANY_ERROR_RESULTS
    # TOO_MANY_SUCCESS_RESULTS is the validator's to set, once the results found no consensus.
    return bits


def _needed_results(wu: WorkunitSnapshot, t: _Tally) -> int:
    return wu.target_nresults - t.nunsent - t.ninprogress - t.nsuccess


def _boosted_priority(wu: WorkunitSnapshot, t: _Tally, config: TransitionConfig) -> int | None:
    # A retry after some instance is over gets a priority boost, as BOINC's reliable_priority_* do.
    if not t.nover:
        return None
    if config.reliable_priority_on_over:
        return wu.priority + config.reliable_priority_on_over
    if config.reliable_priority_on_over_except_error and not t.nerrors:
        return wu.priority + config.reliable_priority_on_over_except_error
    return None


def _should_reset_hr(wu: WorkunitSnapshot, t: _Tally, config: TransitionConfig) -> bool:
    # Only failures so far: let other platforms (homogeneous redundancy classes) try.
    only_failed = t.nerrors > 0 and not (t.nsuccess or t.ninprogress or t.nno_reply)
    return only_failed and not config.hr_class_static and bool(wu.hr_class or wu.app_version_id)


def _mark(results: Sequence[ResultSnapshot], ids: Iterable[int], **changes: Any) -> list[ResultSnapshot]:
    chosen = set(ids)
    return [replace(r, **changes) if r.id in chosen else r for r in results]


def _files_to_delete(
    wu: WorkunitSnapshot, results: Sequence[ResultSnapshot], now: float, config: TransitionConfig
) -> tuple[bool, tuple[int, ...], float | None]:
    """(workunit ready, result ids ready, deferred-until time) for file deletion."""
    if wu.assimilate_state != AssimilateState.DONE:
        return False, (), None
    latest = max((r.received_time for r in results), default=0.0)
    delete_at = latest + config.delete_delay
    if now < delete_at:
        pending = wu.file_delete_state == FileDeleteState.INIT or any(
            r.file_delete_state == FileDeleteState.INIT for r in results
        )
        return False, (), delete_at if pending else None
    all_checked = all(
        r.server_state == ServerState.OVER
        and not (r.outcome == Outcome.SUCCESS and r.validate_state in _UNCHECKED)
        for r in results
    )
    ready: list[int] = []
    for r in results:
        if r.file_delete_state != FileDeleteState.INIT or r.server_state != ServerState.OVER:
            continue
        if r.outcome not in _REPORTED_OUTCOMES:
            # A late report may still use its upload until the workunit is done with its files.
            if all_checked and _sent_unreported(r):
                ready.append(r.id)
            continue
        if r.outcome == Outcome.SUCCESS and r.validate_state in _UNCHECKED:
            continue
        # The canonical output stays until every other success has been compared with it.
        if r.id == wu.canonical_result_id and not all_checked:
            continue
        ready.append(r.id)
    wu_ready = all_checked and wu.file_delete_state == FileDeleteState.INIT
    return wu_ready, tuple(ready), None


def _sent_unreported(r: ResultSnapshot) -> bool:
    """Sent to a host that never reported it, so a whole or half-done (.part) upload may be
    left: timed out, detached, or withdrawn in progress (a relocated sequence step, DIDNT_NEED
    but sent). Results never sent (DIDNT_NEED, COULDNT_SEND) have nothing to delete."""
    return r.outcome in LATE_OUTCOMES or r.report_deadline > 0


def _next_transition_time(
    wu: WorkunitSnapshot, results: Sequence[ResultSnapshot], now: float, done: bool, deferred: float | None
) -> int:
    # Safety net: a workunit still in play is looked at again even if nothing else happens.
    safety_net = math.ceil(now + max(1.5 * wu.delay_bound, SAFETY_NET_MIN_SECONDS))
    when = TRANSITION_NEVER if done else safety_net
    for r in results:
        if r.server_state == ServerState.IN_PROGRESS:
            when = min(when, math.ceil(r.report_deadline))
    if deferred is not None:
        when = min(when, math.ceil(deferred))
    return min(when, TRANSITION_NEVER)


def plan_transition(
    wu: WorkunitSnapshot,
    results: Sequence[ResultSnapshot],
    *,
    now: float,
    config: TransitionConfig | None = None,
) -> TransitionPlan:
    """Decide what the transitioner changes for ``wu`` at time ``now`` (steps in the module doc)."""
    config = config or TransitionConfig()
    if wu.transitioner_flags & TRANSITION_FLAG_NONE:
        return TransitionPlan(wu.id, transition_time=_changed(TRANSITION_NEVER, wu.transition_time))

    timed_out = tuple(
        r.id for r in results if r.server_state == ServerState.IN_PROGRESS and r.report_deadline < now
    )
    cur = _mark(results, timed_out, server_state=ServerState.OVER, outcome=Outcome.NO_REPLY)
    t = _tally(cur)
    has_canonical = wu.canonical_result_id is not None

    mask = wu.error_mask
    new_names: tuple[str, ...] = ()
    priority: int | None = None
    if not has_canonical:
        mask |= _error_bits(wu, t)
        needed = _needed_results(wu, t)
        if not mask and needed > 0 and not wu.transitioner_flags & TRANSITION_FLAG_NO_NEW_RESULTS:
            # BOINC creates as many as the limit allows, and its next pass errors the workunit
            # unless results in progress succeed meanwhile. Erroring at once (a deliberate
            # difference) sends no result that would so likely be withdrawn.
            if needed > wu.max_total_results - t.ntotal:
                mask |= ErrorMask.TOO_MANY_TOTAL_RESULTS
            else:
                new_names = next_result_names(wu.name, cur, needed)
                priority = _boosted_priority(wu, t, config)

    errored = bool(mask)
    didnt_need: tuple[int, ...] = ()
    no_check: tuple[int, ...] = ()
    if errored or has_canonical:
        didnt_need = tuple(r.id for r in cur if r.server_state in _UNSENT_STATES)
    if errored:
        no_check = tuple(
            r.id
            for r in cur
            if r.server_state == ServerState.OVER
            and r.outcome == Outcome.SUCCESS
            and r.validate_state in _UNCHECKED
        )
    cur = _mark(cur, didnt_need, server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    cur = _mark(cur, no_check, validate_state=ValidateState.NO_CHECK)
    after = _tally(cur)

    set_need_validate = not wu.need_validate and after.new_success and after.nsuccess >= wu.min_quorum
    assimilate_ready = wu.assimilate_state == AssimilateState.INIT and (
        errored or (has_canonical and _all_over_and_checked(cur))
    )
    wu_delete, result_delete, deferred = (
        _files_to_delete(wu, cur, now, config) if errored or has_canonical else (False, (), None)
    )
    when = _next_transition_time(wu, cur, now, errored or has_canonical, deferred)
    return TransitionPlan(
        workunit_id=wu.id,
        timed_out_result_ids=timed_out,
        didnt_need_result_ids=didnt_need,
        no_check_result_ids=no_check,
        file_delete_ready_result_ids=result_delete,
        new_result_names=new_names,
        error_mask_set=ErrorMask(mask & ~wu.error_mask),
        set_need_validate=set_need_validate,
        assimilate_ready=assimilate_ready,
        workunit_file_delete_ready=wu_delete,
        reset_hr=_should_reset_hr(wu, t, config),
        priority=priority,
        transition_time=_changed(when, wu.transition_time),
    )


def _all_over_and_checked(results: Iterable[ResultSnapshot]) -> bool:
    return all(
        r.server_state == ServerState.OVER
        and not (r.outcome == Outcome.SUCCESS and r.validate_state == ValidateState.INIT)
        for r in results
    )


def _changed(new: int, old: int) -> int | None:
    return None if new == old else new


def apply_plan(
    wu: WorkunitSnapshot, results: Sequence[ResultSnapshot], plan: TransitionPlan
) -> tuple[WorkunitSnapshot, tuple[ResultSnapshot, ...]]:
    """Apply ``plan`` to copies of ``wu`` and ``results`` (the reference the service mirrors).

    New results get ids after the highest existing one and the state create_work gives them.
    """
    cur = _mark(results, plan.timed_out_result_ids, server_state=ServerState.OVER, outcome=Outcome.NO_REPLY)
    cur = _mark(cur, plan.didnt_need_result_ids, server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    cur = _mark(cur, plan.no_check_result_ids, validate_state=ValidateState.NO_CHECK)
    cur = _mark(cur, plan.file_delete_ready_result_ids, file_delete_state=FileDeleteState.READY)
    next_id = max((r.id for r in cur), default=0) + 1
    cur.extend(ResultSnapshot(id=next_id + i, name=name) for i, name in enumerate(plan.new_result_names))

    changes: dict[str, Any] = {"error_mask": wu.error_mask | plan.error_mask_set}
    if plan.set_need_validate:
        changes["need_validate"] = True
    if plan.assimilate_ready:
        changes["assimilate_state"] = AssimilateState.READY
    if plan.workunit_file_delete_ready:
        changes["file_delete_state"] = FileDeleteState.READY
    if plan.reset_hr:
        changes.update(hr_class=0, app_version_id=0)
    if plan.priority is not None:
        changes["priority"] = plan.priority
    if plan.transition_time is not None:
        changes["transition_time"] = plan.transition_time
    return replace(wu, **changes), tuple(cur)
