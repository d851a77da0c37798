"""Applying the domain's relocation and end plans to a loaded, locked chain (docs/sequences.md).

Relocation (``relocation_apply``), for a ``RelocationPlan`` from apps.sequences.domain.rules:

1. the old host's unfinished results of the steps to redo become OVER: NO_REPLY when past their
   deadline and grace period, else DIDNT_NEED. A late report is then ignored, so a step is never
   validated twice from two hosts' diverging chains, and the scheduler's abort list tells the old
   host to drop them;
2. each step to redo gets a new INACTIVE result; one that had a canonical result is re-opened
   (apps/sequences/domain/relocation.py): the canonical result is cleared and the workunit
   will be assimilated again, and its files deleted again, once the new result validates;
3. the first step to redo reads the checkpoint's uploaded state (staged in the download area), and
   each later one the state of its predecessor's new result;
4. the head is written: UNASSIGNED, first_undispatched back at the restart point, or ERROR after too
   many relocations (then every unvalidated step is cancelled, as ``chain_end`` does).

Ending (``chain_end``): every step without a validated result is cancelled like BOINC's
cancel_jobs (unsent results withdrawn, running ones aborted by the host on its next RPC through
the workunit's error mask), and the head becomes ENDED with its length fixed; the host is told on
its next RPC.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Exists, F, OuterRef, Q

from apps.core import clock
from apps.sequences.domain.rules import RelocationPlan, SequenceSnapshot, end_plan
from apps.sequences.models import WorkSequence
from apps.sequences.services.rows import Chain, head_save
from apps.sequences.services.steps import checkpoint_stage, state_inputs_link, step_result_create
from apps.work.domain.states import (
    AssimilateState,
    ErrorMask,
    FileDeleteState,
    Outcome,
    SequenceState,
    ServerState,
    ValidateState,
)
from apps.work.models import Result, Workunit

DEFAULT_MAX_RELOCATIONS = 10
WAITING = (ServerState.INACTIVE, ServerState.UNSENT)  # a step result not sent yet
_FAILED = (
    Outcome.COULDNT_SEND,
    Outcome.CLIENT_ERROR,
    Outcome.NO_REPLY,
    Outcome.VALIDATE_ERROR,
    Outcome.CLIENT_DETACHED,
)


def max_relocations() -> int:
    return int(getattr(settings, "COBBLESTONE_SEQUENCE_MAX_RELOCATIONS", DEFAULT_MAX_RELOCATIONS))


def grace_now(chain: Chain, now: datetime) -> datetime:
    """Deadlines are judged with the project's grace period, as the transitioner judges them."""
    return now - timedelta(seconds=chain.head.project.report_grace_period)


def _retire(result: Result, *, late_before: datetime) -> None:
    late = result.report_deadline is not None and result.report_deadline < late_before
    outcome = Outcome.NO_REPLY if late else Outcome.DIDNT_NEED
    Result.objects.filter(id=result.id, server_state=ServerState.IN_PROGRESS).update(
        server_state=ServerState.OVER, outcome=outcome
    )


def relocation_apply(chain: Chain, plan: RelocationPlan, *, now: datetime) -> None:
    """Write a relocation plan (steps in the module doc)."""
    late_before = grace_now(chain, now)
    if plan.sequence.state == SequenceState.ERROR:
        n = plan.sequence.n_relocations
        reason = f"relocated {n} time{'' if n == 1 else 's'}; the limit is {max_relocations()}"
        chain_fail(chain, reason, now=now, head=plan.sequence)
        return
    old_first_undispatched = chain.snapshot.first_undispatched_index
    _reopen([chain.workunits[i] for i in plan.recreate_step_indices])
    for index in plan.recreate_step_indices:
        old = chain.results[index]
        if old.server_state == ServerState.IN_PROGRESS:
            _retire(old, late_before=late_before)
        # transition_time is left alone: a transitioner pass over a validated step now would
        # withdraw the new INACTIVE result like an unneeded unsent one.
        chain.results[index] = step_result_create(chain.workunits[index])
    restart = 0 if plan.restart_after_index is None else plan.restart_after_index + 1
    n = len(chain.workunits)
    if 0 < restart < n and plan.restart_state_result_id is not None:
        checkpoint = Result.objects.select_related("workunit", "project").get(id=plan.restart_state_result_id)
        checkpoint_stage(checkpoint)  # staged when it validated; again in case that copy is gone
        state_inputs_link(chain.workunits[restart], checkpoint)
    for j in range(restart + 1, min(old_first_undispatched + 1, n)):
        state_inputs_link(chain.workunits[j], chain.results[j - 1])
    if chain.head.assigned_host_id is not None and plan.sequence.assigned_host_id is None:
        # The design relocates a sequence to another host, not back to this one.
        chain.head.relocated_from_id = chain.head.assigned_host_id
        chain.head.relocated_time = now
        chain.head.save(update_fields=["relocated_from", "relocated_time"])
    head_save(chain, plan.sequence, now=now)


def _reopen(workunits: list[Workunit]) -> None:
    """Validated steps to redo lose their canonical result: the new branch's result replaces it."""
    reopened = [wu for wu in workunits if wu.canonical_result_id is not None]
    Workunit.objects.filter(id__in=[wu.id for wu in reopened]).update(
        canonical_result=None,
        canonical_credit=0,
        need_validate=False,
        assimilate_state=AssimilateState.INIT,
        file_delete_state=FileDeleteState.INIT,
    )
    for wu in reopened:
        wu.canonical_result_id = None


def chain_fail(chain: Chain, reason: str, *, now: datetime, head: SequenceSnapshot | None = None) -> None:
    """End a chain in ERROR with ``reason`` (shown in the admin): every unvalidated step is
    cancelled, and the host is told on its next RPC. ``head``: the snapshot to write, if the
    caller's plan made one."""
    new = head or replace(chain.snapshot, state=SequenceState.ERROR, assigned_host_id=None)
    _cancel_unvalidated(chain, now)
    head_save(chain, new, now=now)
    chain.head.error_reason = reason
    chain.head.save(update_fields=["error_reason"])


def _cancel_unvalidated(chain: Chain, now: datetime) -> int:
    ids = [wu.id for wu in chain.workunits if wu.canonical_result_id is None and not wu.error_mask]
    Workunit.objects.filter(id__in=ids).update(
        error_mask=F("error_mask").bitor(int(ErrorMask.CANCELLED)), transition_time=now
    )
    Result.objects.filter(
        workunit_id__in=ids, server_state__in=[ServerState.UNSENT, ServerState.INACTIVE]
    ).update(server_state=ServerState.OVER, outcome=Outcome.DIDNT_NEED)
    return len(ids)


def chain_end(chain: Chain, *, now: datetime | None = None) -> bool:
    """End a live chain now (steps in the module doc); False if it was not live."""
    now = now or clock.now()
    if chain.head.state not in (SequenceState.UNASSIGNED, SequenceState.ASSIGNED):
        return False
    plan = end_plan(chain.snapshot, chain.steps)
    _cancel_unvalidated(chain, now)
    head_save(chain, plan.sequence, now=now)
    if chain.head.expected_length != len(chain.workunits):
        chain.head.expected_length = len(chain.workunits)
        chain.head.save(update_fields=["expected_length"])
    return True


def undispatched_repair(chain: Chain) -> int:
    """Give a new INACTIVE result to each undispatched step whose current one was withdrawn.

    The transitioner and validator withdraw unsent (and INACTIVE) results of a workunit that has a
    canonical result or an error; a step redone after a relocation can be such a workunit. Without
    this, the sequence would stall at that step. Returns the number of results made."""
    made = 0
    n = len(chain.workunits)
    for index in range(chain.snapshot.first_undispatched_index, n):
        wu = chain.workunits[index]
        current = chain.results.get(index)
        if wu.error_mask or (current is not None and current.server_state in WAITING):
            continue
        chain.results[index] = step_result_create(wu)
        if index + 1 < n:
            state_inputs_link(chain.workunits[index + 1], chain.results[index])
        made += 1
    return made


def failed_results_query(now: datetime) -> Q:
    """Results sent to a sequence's assigned host during its current assignment that failed or
    are past their deadline (the daemon's candidates; the grace period is checked per sequence)."""
    assigned_to_its_host = WorkSequence.objects.filter(
        id=OuterRef("workunit__sequence_id"),
        state=SequenceState.ASSIGNED,
        assigned_host_id=OuterRef("host_id"),
        assigned_time__lte=OuterRef("sent_time"),
    )
    return Q(Exists(assigned_to_its_host)) & (
        Q(server_state=ServerState.IN_PROGRESS, report_deadline__lt=now)
        | Q(server_state=ServerState.OVER, outcome__in=_FAILED)
        | Q(validate_state=ValidateState.INVALID)
    )
