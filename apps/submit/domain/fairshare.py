"""Fair share between submitters (BOINC's allocation scheme, adjust_user_priority).

Each submitter has a quota; its share is the quota over all submitters' quotas. Every
submitter keeps a logical clock: queuing work of F FLOPs moves it on by the time the whole
project would take to do F at the submitter's share, ``F / project_flops / share``, from
now if it had fallen behind. Jobs run in the order of their logical end times, so while
two submitters with equal quotas both have work queued their jobs alternate, whatever the
size of their batches, and a submitter idle for a while starts again at once.

BOINC gives a whole batch one logical end time; here every job gets its own, the clock
after that job, so a large batch is interleaved job by job with the jobs others queue later.
The end time becomes the job's priority (higher runs first), which the scheduler already
orders by: fair share costs a scheduler request nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Logical times are Unix seconds; priorities count seconds back from this epoch (2020-09-13)
# so that they fit a 32-bit integer for decades.
PRIORITY_EPOCH = 1_600_000_000.0
INT32_MIN = -(2**31)
# BOINC's estimate when no host has earned credit recently: 200 credits a day, a GigaFLOPS.
MIN_PROJECT_FLOPS = 1e9


def project_flops(total_recent_credit: float) -> float:
    """The project's speed from its recent average credit (200 credits a day per GigaFLOPS)."""
    return max(1e9 * total_recent_credit / 200, MIN_PROJECT_FLOPS)


def share(quota: float, total_quota: float) -> float:
    """A submitter's fraction of the project; 0 when it has no quota."""
    if quota <= 0 or total_quota <= 0:
        return 0.0
    return quota / total_quota


def priority_delta(flops: float, *, share_of_project: float, flops_per_second: float) -> float:
    """Logical seconds that ``flops`` of work cost a submitter with this share."""
    if share_of_project <= 0 or flops_per_second <= 0:
        return 0.0
    return flops / flops_per_second / share_of_project


def end_time_priority(logical_end_time: float) -> int:
    """The job priority of a logical end time: earlier end, higher priority."""
    return max(INT32_MIN, -int(logical_end_time - PRIORITY_EPOCH))


@dataclass(frozen=True, slots=True)
class Allocation:
    """Where a submitter's clock was and went, and each job's priority."""

    logical_start_time: float
    logical_end_time: float
    priorities: tuple[int, ...]


def allocate(
    job_flops: Sequence[float],
    *,
    clock: float,
    now: float,
    share_of_project: float,
    flops_per_second: float,
) -> Allocation:
    """Advance a submitter's logical ``clock`` over its new jobs, one job at a time."""
    start = max(clock, now)
    t = start
    priorities = []
    for flops in job_flops:
        t += priority_delta(flops, share_of_project=share_of_project, flops_per_second=flops_per_second)
        priorities.append(end_time_priority(t))
    return Allocation(start, t, tuple(priorities))


def estimated_seconds(total_flops: float, flops_per_second: float) -> float:
    """BOINC's estimate_batch: the batch's FLOPs over the project's speed."""
    return total_flops / flops_per_second if flops_per_second > 0 else 0.0
