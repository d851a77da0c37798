"""Work sequences (docs/sequences.md): pure rules for the head record, sending, relocation and extension.

BOINC designed this but never built it; the decisions below are this
project's. A sequence W0..Wn-1 is a chain of workunits (``SequenceStep``; indices are 0-based)
represented by a head record (``SequenceSnapshot``); each step workunit has one current result
in the chain. Functions return new snapshots or plans; the services write them.

Decisions:

* **Who makes step results.** Only these plans: step workunits carry
  ``TRANSITION_FLAG_NO_NEW_RESULTS`` (transitions.py) and a generous max_error_results /
  max_total_results, so the transitioner never makes a replacement that the ordinary scheduler
  could send to another host; a step result leaves only through ``results_to_send``.
* **Files.** A step's outputs are STATE (the next step's input) or REPORT (a small progress or
  science file). REPORT is always uploaded. STATE stays on the host as a sticky file, and is also
  uploaded at restartable steps (a full-state checkpoint) and at the final step (the product).
  Step k+1 names step k's state file as its input, so the client downloads it only when it does
  not hold it: after relocation, that is the checkpoint state the server has.
* **Sending.** Undispatched steps go out in index order from ``first_undispatched_index``,
  never skipping one and never beyond the known steps. The request decides how many, but the host
  always gets enough to hold ``min_ahead`` (2, the design's number) unfinished steps, so it never
  idles while its upload of the previous state is in flight. That floor applies even when the
  request asks for nothing, since an assigned sequence stalls otherwise; the sequence-mix bound
  (``max_sequence_jobs``) caps only the request-driven part, so non-sequence work is not starved.
* **Assignment.** Only an UNASSIGNED sequence, and only to a host that finishes one result within
  ``max_result_time`` of real time (the service estimates that from host speed and availability).
* **Relocation.** When a result dispatched to the assigned host after the latest checkpoint misses
  its deadline, errors or is found invalid, the sequence is deassigned and restarts after the last
  restartable step with a validated result (or from the start): every dispatched step after it
  gets a new result and ``first_undispatched_index`` returns to just after it. Steps up to the
  checkpoint are never re-created; a validated step after it is re-opened and recomputed, since
  its state never left the old host (the reading of the design is in relocation.py). After
  ``max_relocations`` the sequence goes to ERROR instead of looping on a step that always fails.
  While the host holds the sequence, no step goes to it after an earlier one failed there
  (``results_to_send``): that step's successors could never run.
  The old host's in-progress results are left alone: they time out, or if reported late are
  validated like any result; the host learns of the move from a NOT_ASSIGNED notice.
* **Ending.** ``ended`` means no more steps will be added (climate: set at creation; folding: set
  when the project stops extending). State ENDED means finished and no longer assigned: when the
  last step validates on an ended sequence, or at once through ``end_plan``, which drops unsent
  step results and asks the host to abort what it still runs.
* **Reconciliation.** For each sequence the host reports: still its own → SEND_MORE; ended →
  ENDED; anything else → NOT_ASSIGNED. A sequence assigned to the host that it does not report is
  LOST (its sticky state is gone, or it never got the reply that assigned it): the service
  relocates it, since continuing needs state the host may not have.
* **Redundancy.** Replica chains on different hosts, compared at restartable checkpoints; see
  replicas.py for the design and its trade-off.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from apps.sequences.domain.relocation import (
    failed_step_indices,
    missed_deadline_plan,
    refresh_head,
    relocation_plan,
)
from apps.sequences.domain.replicas import (
    ReplicaCheckpoint,
    ReplicaVerdict,
    compare_replica_steps,
    follow_sibling_chains,
    fresh_host_until,
    replica_host_allowed,
)
from apps.sequences.domain.types import (
    MIN_AHEAD,
    Checkpoint,
    EndPlan,
    ExtendPlan,
    NoticeAction,
    OutputFileKind,
    OutputFilePlan,
    OutputFileSpec,
    RelocationPlan,
    SequenceNotice,
    SequenceSnapshot,
    SequenceStep,
)
from apps.work.domain.states import SequenceState, ServerState

__all__ = [
    "Checkpoint",
    "EndPlan",
    "ExtendPlan",
    "NoticeAction",
    "OutputFileKind",
    "OutputFilePlan",
    "OutputFileSpec",
    "RelocationPlan",
    "ReplicaCheckpoint",
    "ReplicaVerdict",
    "SequenceNotice",
    "SequenceSnapshot",
    "SequenceStep",
    "assign_sequence",
    "compare_replica_steps",
    "end_plan",
    "extend_plan",
    "failed_step_indices",
    "follow_sibling_chains",
    "fresh_host_until",
    "has_failed_step",
    "host_can_take_sequence",
    "is_restartable",
    "mark_dispatched",
    "max_sequence_jobs",
    "missed_deadline_plan",
    "needs_extension",
    "plan_output_files",
    "reconcile_host_sequences",
    "refresh_head",
    "relocation_plan",
    "replica_host_allowed",
    "results_to_send",
]


def is_restartable(index: int, every_k: int, *, last_index: int | None = None) -> bool:
    """Every ``every_k``-th step (1-based counting; 0 = never) and the final step upload full state."""
    if index == last_index:
        return True
    return every_k > 0 and (index + 1) % every_k == 0


def plan_output_files(
    files: Iterable[OutputFileSpec], *, restartable: bool, final: bool
) -> tuple[OutputFilePlan, ...]:
    """Upload REPORT files always; keep STATE on the host, uploading it at checkpoints and the end."""
    plans = []
    for f in files:
        if f.kind == OutputFileKind.REPORT:
            plans.append(OutputFilePlan(f.name, upload=True, keep_on_host=False))
        else:
            plans.append(OutputFilePlan(f.name, upload=restartable or final, keep_on_host=not final))
    return tuple(plans)


def host_can_take_sequence(seq: SequenceSnapshot, est_runtime_seconds_for_one_result: float) -> bool:
    """An UNASSIGNED sequence, for a host that finishes one result within max_result_time."""
    return (
        seq.state == SequenceState.UNASSIGNED
        and 0 < est_runtime_seconds_for_one_result <= seq.max_result_time
    )


def assign_sequence(seq: SequenceSnapshot, host_id: int) -> SequenceSnapshot:
    if seq.state != SequenceState.UNASSIGNED:
        raise ValueError(f"sequence {seq.id} is not unassigned")
    return replace(seq, state=SequenceState.ASSIGNED, assigned_host_id=host_id)


def _in_progress_count(seq: SequenceSnapshot, steps: Iterable[SequenceStep]) -> int:
    return sum(
        1
        for s in steps
        if s.index < seq.first_undispatched_index and s.server_state == ServerState.IN_PROGRESS
    )


def has_failed_step(seq: SequenceSnapshot, steps: Iterable[SequenceStep]) -> bool:
    """Whether a step dispatched to the current host since the checkpoint was reported failed
    (an error, or found invalid). Its successors read its state, so none of them can run."""
    after = -1 if seq.last_restartable_validated_index is None else seq.last_restartable_validated_index
    return any(
        after < s.index < seq.first_undispatched_index
        and s.server_state == ServerState.OVER
        and s.failed(now=0.0)  # a reported outcome; deadlines are the daemon's to judge
        for s in steps
    )


def results_to_send(
    seq: SequenceSnapshot,
    steps: Sequence[SequenceStep],
    *,
    host_id: int,
    requested_jobs: int,
    requested_seconds: float,
    est_runtime: float,
    min_ahead: int = MIN_AHEAD,
    max_jobs: int | None = None,
) -> tuple[SequenceStep, ...]:
    """The next undispatched steps for ``host_id``, in order (empty unless it holds ``seq``).

    The request wants ``max(requested_jobs, ceil(requested_seconds / est_runtime))`` results,
    capped by ``max_jobs`` (the sequence-mix bound); at least enough go to leave ``min_ahead``
    unfinished steps on the host. Sending stops at the first step without an unsent result, and
    nothing goes once a step failed on the host (``has_failed_step``).
    """
    if seq.state != SequenceState.ASSIGNED or seq.assigned_host_id != host_id:
        return ()
    if has_failed_step(seq, steps):
        return ()
    wanted = max(requested_jobs, 0)
    if est_runtime > 0 and requested_seconds > 0:
        wanted = max(wanted, math.ceil(requested_seconds / est_runtime))
    if max_jobs is not None:
        wanted = min(wanted, max(max_jobs, 0))
    count = max(wanted, min_ahead - _in_progress_count(seq, steps))
    by_index = {s.index: s for s in steps}
    chosen: list[SequenceStep] = []
    for index in range(seq.first_undispatched_index, seq.n_workunits):
        step = by_index.get(index)
        if len(chosen) >= count or step is None or not step.sendable:
            break
        chosen.append(step)
    return tuple(chosen)


def mark_dispatched(seq: SequenceSnapshot, sent: Sequence[SequenceStep]) -> SequenceSnapshot:
    """The head after ``sent`` (from ``results_to_send``) went out."""
    start = seq.first_undispatched_index
    if [s.index for s in sent] != list(range(start, start + len(sent))):
        raise ValueError("steps must be dispatched in order from first_undispatched_index")
    return replace(seq, first_undispatched_index=start + len(sent))


def max_sequence_jobs(
    *,
    host_sequence_jobs: int,
    host_total_jobs: int,
    requested_jobs: int,
    max_fraction: float | None = None,
    max_count: int | None = None,
) -> int | None:
    """Cap on request-driven sequence jobs in one reply (pass as ``max_jobs``); None: no cap.

    After the reply, sequence jobs may be at most ``max_fraction`` of the host's jobs (assuming
    the request is filled) and at most ``max_count`` in all; the rest of the request is left to
    non-sequence work.
    """
    caps = []
    if max_count is not None:
        caps.append(max_count - host_sequence_jobs)
    if max_fraction is not None:
        caps.append(math.floor(max_fraction * (host_total_jobs + requested_jobs)) - host_sequence_jobs)
    return max(min(caps), 0) if caps else None


def reconcile_host_sequences(
    host_id: int, reported_sequence_ids: Iterable[int], sequences: Mapping[int, SequenceSnapshot]
) -> tuple[SequenceNotice, ...]:
    """Notices for the sequences the host reports and those assigned to it that it does not.

    ``sequences`` holds every reported sequence that still exists and every sequence the server
    has assigned to ``host_id``.
    """
    reported = sorted(set(reported_sequence_ids))
    notices = []
    for seq_id in reported:
        seq = sequences.get(seq_id)
        if seq is not None and seq.state == SequenceState.ENDED:
            action = NoticeAction.ENDED
        elif seq is not None and seq.assigned_host_id == host_id:
            action = NoticeAction.SEND_MORE
        else:
            action = NoticeAction.NOT_ASSIGNED
        notices.append(SequenceNotice(seq_id, action))
    lost = sorted(s.id for s in sequences.values() if s.assigned_host_id == host_id and s.id not in reported)
    notices.extend(SequenceNotice(seq_id, NoticeAction.LOST) for seq_id in lost)
    return tuple(notices)


def needs_extension(seq: SequenceSnapshot, *, min_undispatched: int = MIN_AHEAD) -> bool:
    """Whether the back end should extend ``seq`` now (fewer undispatched steps than wanted)."""
    live = seq.state in (SequenceState.UNASSIGNED, SequenceState.ASSIGNED)
    return live and not seq.ended and seq.n_workunits - seq.first_undispatched_index < min_undispatched


def extend_plan(
    seq: SequenceSnapshot, n_new: int, *, restartable_every: int = 0, final: bool = False
) -> ExtendPlan:
    """Append ``n_new`` steps; ``final`` makes the last one upload final state and sets ``ended``.

    Creating a sequence is extending an empty one (``SequenceSnapshot(id=..., n_workunits=0)``).
    """
    if n_new < 1:
        raise ValueError("n_new must be at least 1")
    if seq.ended or seq.state in (SequenceState.ENDED, SequenceState.ERROR):
        raise ValueError(f"sequence {seq.id} has ended")
    new = tuple(range(seq.n_workunits, seq.n_workunits + n_new))
    last = new[-1] if final else None
    restartable = frozenset(i for i in new if is_restartable(i, restartable_every, last_index=last))
    head = replace(
        seq,
        n_workunits=seq.n_workunits + n_new,
        ended=final,
        restartable_indices=seq.restartable_indices | restartable,
    )
    return ExtendPlan(head, new, restartable)


def end_plan(
    seq: SequenceSnapshot, steps: Iterable[SequenceStep] = (), *, abort_in_progress: bool = True
) -> EndPlan:
    """End ``seq`` now (the project decided so): deassign, drop unsent steps, stop running ones."""
    steps = list(steps)
    unsent = tuple(s.result_id for s in steps if s.sendable and s.result_id is not None)
    running = tuple(
        s.result_id
        for s in steps
        if abort_in_progress and s.server_state == ServerState.IN_PROGRESS and s.result_id is not None
    )
    head = replace(seq, state=SequenceState.ENDED, assigned_host_id=None, ended=True)
    return EndPlan(head, unsent, running, seq.assigned_host_id)
