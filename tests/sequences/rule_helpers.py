"""Plain-value stand-ins for what the sequence services write, shared by the sequence tests."""

from __future__ import annotations

from dataclasses import replace

from apps.sequences.domain.rules import (
    RelocationPlan,
    SequenceSnapshot,
    SequenceStep,
    assign_sequence,
    extend_plan,
    mark_dispatched,
    results_to_send,
)
from apps.work.domain.states import Outcome, ServerState, ValidateState

NOW = 1_700_000_000.0
DAY = 86400.0
DELAY = 6 * DAY
HOST_A, HOST_B = 11, 22

Steps = list[SequenceStep]


def new_chain(
    n: int, *, every_k: int = 0, final: bool = False, seq_id: int = 1, max_result_time: float = 4 * DAY
) -> tuple[SequenceSnapshot, Steps]:
    plan = extend_plan(
        SequenceSnapshot(seq_id, max_result_time=max_result_time), n, restartable_every=every_k, final=final
    )
    return plan.sequence, [_new_step(seq_id, i, i in plan.restartable_indices) for i in plan.new_step_indices]


def _new_step(seq_id: int, index: int, restartable: bool) -> SequenceStep:
    return SequenceStep(
        index,
        workunit_id=1000 * seq_id + index,
        result_id=100_000 * seq_id + index,
        server_state=ServerState.UNSENT,
        restartable=restartable,
    )


def extend(seq: SequenceSnapshot, steps: Steps, n: int, **kw: object) -> tuple[SequenceSnapshot, Steps]:
    plan = extend_plan(seq, n, **kw)  # type: ignore[arg-type]
    return plan.sequence, steps + [
        _new_step(seq.id, i, i in plan.restartable_indices) for i in plan.new_step_indices
    ]


def rpc(
    seq: SequenceSnapshot, steps: Steps, host: int, now: float, *, jobs: int = 1
) -> tuple[SequenceSnapshot, Steps, list[int]]:
    sent = results_to_send(
        seq, steps, host_id=host, requested_jobs=jobs, requested_seconds=0, est_runtime=3 * DAY
    )
    chosen = {s.index for s in sent}
    steps = [
        replace(s, server_state=ServerState.IN_PROGRESS, report_deadline=now + DELAY)
        if s.index in chosen
        else s
        for s in steps
    ]
    return mark_dispatched(seq, sent), steps, sorted(chosen)


def finish(steps: Steps, index: int) -> Steps:
    """Report step ``index`` as a success and validate it alone (quorum 1), as the validator would."""
    s = steps[index]
    done = replace(
        s,
        server_state=ServerState.OVER,
        outcome=Outcome.SUCCESS,
        validate_state=ValidateState.VALID,
        canonical_result_id=s.canonical_result_id or s.result_id,
    )
    return [*steps[:index], done, *steps[index + 1 :]]


def report(steps: Steps, index: int) -> Steps:
    """Report step ``index`` as a success the validator has not looked at yet."""
    done = replace(steps[index], server_state=ServerState.OVER, outcome=Outcome.SUCCESS)
    return [*steps[:index], done, *steps[index + 1 :]]


def recreate(steps: Steps, plan: RelocationPlan) -> Steps:
    fresh = max(s.result_id or 0 for s in steps) + 1
    out = list(steps)
    for n, index in enumerate(plan.recreate_step_indices):
        out[index] = replace(
            out[index],
            result_id=fresh + n,
            server_state=ServerState.UNSENT,
            outcome=Outcome.INIT,
            validate_state=ValidateState.INIT,
            report_deadline=None,
        )
    return out


def in_progress_indices(steps: Steps) -> list[int]:
    return [s.index for s in steps if s.server_state == ServerState.IN_PROGRESS]


def assigned(n: int, host: int = HOST_A, **kw: object) -> tuple[SequenceSnapshot, Steps]:
    seq, steps = new_chain(n, **kw)  # type: ignore[arg-type]
    return assign_sequence(seq, host), steps
