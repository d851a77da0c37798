"""Recent average credit (RAC): exponentially decaying credit per day.

The average decays with a half-life of one week, and each grant adds its credit at once as
an impulse: RAC(t) = sum of work_i * ln2 / half_life_days * 2**(-(t - t_i) / half_life).
That sum converges to the credit earned per day under steady work, and it is additive: a
team's average is the sum of its members', a user's the sum of their computers' (for the
credit granted while they belonged), whatever order and times the rows were updated in.

BOINC's update_average differs in two ways that each break that sum. It spreads a grant
over the interval since the row's last update (so the same grant adds less to a team
updated an hour ago than to a member idle for a day), and it starts a row with
work / (now - result.sent_time), which for a first job of a few hours is many times
its credit per day. A team got that start once, each of its members once too, so the
members' averages summed to twice the team's. The same function serves hosts, users,
teams and app versions (expavg_credit/expavg_time).
"""

from __future__ import annotations

import math

SECONDS_PER_DAY = 86400.0
# BOINC's CREDIT_HALF_LIFE on the server.
CREDIT_HALF_LIFE = 7 * SECONDS_PER_DAY


def update_rac(
    avg: float, avg_time: float, work: float, now: float, *, half_life: float = CREDIT_HALF_LIFE
) -> tuple[float, float]:
    """(expavg_credit, expavg_time) after granting ``work`` credits at ``now``: the average
    decayed from ``avg_time`` (0: no update yet) to ``now``, plus the grant's impulse. A
    clock going backwards counts as no time passed."""
    if avg_time > 0:
        elapsed = max(now - avg_time, 0.0)
        avg *= math.exp(-elapsed * math.log(2) / half_life)
    return avg + math.log(2) * work * SECONDS_PER_DAY / half_life, now


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
