"""Recent average credit (RAC): BOINC's exponentially decaying credit per day.

The average decays with a half-life of one week. Work granted at ``now`` is spread over
the interval since the last update, so RAC converges to the credit earned per day.
The same function serves hosts, users, teams and app versions (expavg_credit/expavg_time).
"""

from __future__ import annotations

import math

SECONDS_PER_DAY = 86400.0
# BOINC's CREDIT_HALF_LIFE on the server.
CREDIT_HALF_LIFE = 7 * SECONDS_PER_DAY


def update_rac(
    avg: float,
    avg_time: float,
    work: float,
    now: float,
    *,
    work_start_time: float | None = None,
    half_life: float = CREDIT_HALF_LIFE,
) -> tuple[float, float]:
    """(expavg_credit, expavg_time) after granting ``work`` credits at ``now``.

    avg_time == 0 means no update yet: the first average is work per day since
    ``work_start_time`` (result.sent_time), or, with no usable start, the small-interval
    limit below. A clock going backwards counts as no time passed.
    """
    if avg_time > 0:
        elapsed = max(now - avg_time, 0.0)
        decay = math.exp(-elapsed * math.log(2) / half_life)
        gained = -math.expm1(-elapsed * math.log(2) / half_life)  # 1 - decay, without cancellation
        avg *= decay
        if gained > 1e-6:
            avg += gained * work / (elapsed / SECONDS_PER_DAY)
        else:
            # Limit of gained/elapsed_days as elapsed -> 0.
            avg += math.log(2) * work * SECONDS_PER_DAY / half_life
    elif work:
        start = now if work_start_time is None else work_start_time
        days = (now - start) / SECONDS_PER_DAY
        # No usable interval: the small-interval limit, as for a quick second update.
        avg = work / days if days > 0 else math.log(2) * work * SECONDS_PER_DAY / half_life
    return avg, now


def decay_rac(
    avg: float, avg_time: float, now: float, *, half_life: float = CREDIT_HALF_LIFE
) -> tuple[float, float]:
    """RAC decayed to ``now`` with no new work (BOINC's update_stats does this daily).

    An average already updated after ``now`` (credit granted since update_stats took its
    time) is newer than the decay: it keeps its time, which the next grant decays from.
    """
    if avg_time > now:
        return avg, avg_time
    return update_rac(avg, avg_time, 0.0, now, half_life=half_life)
