"""A batch's figures from the counts of its jobs (BOINC's get_batch_params)."""

from __future__ import annotations

from dataclasses import dataclass

from apps.submit.domain.states import BatchState


@dataclass(frozen=True, slots=True)
class JobCounts:
    njobs: int
    success: int  # a canonical result
    errors: int  # errored out without one
    in_progress: int  # neither, with a task on a host
    unassimilated: int  # decided (success or error) but not assimilated yet
    fpops_total: float = 0.0
    fpops_done: float = 0.0
    credit_canonical: float = 0.0


@dataclass(frozen=True, slots=True)
class Progress:
    fraction_done: float
    complete: bool
    # Seconds from now until the rest is done at the pace so far; None when unknown.
    seconds_left: float | None


def progress(counts: JobCounts, *, elapsed: float) -> Progress:
    """Done is success or error; complete once every job is done and assimilated.

    The estimate extrapolates the pace since submission over the FLOPs still to do."""
    if counts.njobs == 0:
        return Progress(0.0, False, None)
    done = counts.success + counts.errors
    fraction = done / counts.njobs
    complete = done == counts.njobs and counts.unassimilated == 0
    seconds_left: float | None = None
    if complete:
        seconds_left = 0.0
    elif counts.fpops_done > 0 and elapsed > 0 and counts.fpops_total > 0:
        rate = counts.fpops_done / elapsed
        seconds_left = max(counts.fpops_total - counts.fpops_done, 0.0) / rate
    elif done and elapsed > 0:
        seconds_left = elapsed * (counts.njobs - done) / done
    return Progress(fraction, complete, seconds_left)


def next_state(state: BatchState, prog: Progress) -> BatchState:
    """An in-progress batch completes when its progress says so; others keep their state."""
    if state == BatchState.IN_PROGRESS and prog.complete:
        return BatchState.COMPLETE
    return state
