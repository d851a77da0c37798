"""The rules a workunit's numbers obey: create_work checks each job with them, and an app's job
defaults (App.clean) with the same function, so an app cannot be saved with defaults that every
later create_work would refuse.

Lives below ``apps.work`` in the layers because App (apps.applications) needs it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Far above any quorum a project uses, low enough that a typo cannot make one call write
# millions of results.
MAX_REPLICAS = 1000
# 10^8 s, about 3.2 years. BOINC sets no explicit cap, but keeps delay_bound and the deadline
# in 32-bit integer columns (a deadline past 2038 cannot be stored there); this is above the
# longest deadlines projects give (climateprediction.net's, about a year), below that limit,
# and far from datetime's year 9999, so now + delay_bound + grace period always computes.
MAX_DELAY_BOUND = 10**8

REPLICA_FIELDS = (
    "min_quorum",
    "target_nresults",
    "max_error_results",
    "max_total_results",
    "max_success_results",
)


@dataclass(frozen=True, slots=True)
class BoundsProblem:
    """A broken rule: the message, and the fields it is about (the one to change first)."""

    message: str
    fields: tuple[str, ...]


def delay_bound_problem(key: str, value: float) -> str | None:
    """A duration (delay_bound, a sequence's max_result_time) outside 1 s .. MAX_DELAY_BOUND."""
    if not value >= 1:
        return f"{key} must be at least one second"
    if value > MAX_DELAY_BOUND:
        return f"{key} must be at most {MAX_DELAY_BOUND} seconds (about 3 years)"
    return None


def job_bounds_problems(values: Mapping[str, float | int | None]) -> list[BoundsProblem]:
    """Every rule ``values`` break, in a fixed order (create_work reports the first). A rule
    about a field ``values`` lacks is skipped (an app has no rsc_fpops_* defaults)."""
    v = {key: value for key, value in values.items() if value is not None}
    problems = [
        BoundsProblem(f"{key} must be a non-negative number, got {value}", (key,))
        for key, value in v.items()
        if value != value or value < 0
    ]
    if problems:
        return problems  # the comparisons below mean nothing with a NaN or a negative count

    def rule(broken: bool, message: str, *fields: str) -> None:
        if broken:
            problems.append(BoundsProblem(message, fields))

    def has(*fields: str) -> bool:
        return all(f in v for f in fields)

    if has("min_quorum"):
        rule(v["min_quorum"] < 1, "min_quorum must be at least 1", "min_quorum")
    if has("target_nresults", "min_quorum"):
        rule(
            v["target_nresults"] < v["min_quorum"],
            "target_nresults must be at least min_quorum",
            "target_nresults",
            "min_quorum",
        )
    if has("rsc_fpops_bound", "rsc_fpops_est"):
        rule(
            v["rsc_fpops_bound"] < v["rsc_fpops_est"],
            "rsc_fpops_bound must be at least rsc_fpops_est",
            "rsc_fpops_bound",
            "rsc_fpops_est",
        )
    if has("delay_bound"):
        message = delay_bound_problem("delay_bound", v["delay_bound"])
        rule(message is not None, message or "", "delay_bound")
    if has("max_total_results", "target_nresults"):
        rule(
            v["max_total_results"] < v["target_nresults"],
            "max_total_results must be at least target_nresults",
            "max_total_results",
            "target_nresults",
        )
    for key in REPLICA_FIELDS:
        if has(key):
            rule(v[key] > MAX_REPLICAS, f"{key} must be at most {MAX_REPLICAS}", key)
    return problems
