"""Targeted and broadcast jobs (BOINC's assignment table and its scheduler rules).

A targeted job goes only to its target: one host, any host of one user, or any host of one
team's members. A broadcast job goes once to every host (or every host of one user or
team). Work creation makes no results for either; the scheduler makes each when it sends it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from apps.work.domain.states import Outcome, ServerState, ValidateState


class TargetType(IntEnum):
    """BOINC's ASSIGN_NONE, ASSIGN_HOST, ASSIGN_USER, ASSIGN_TEAM."""

    NONE = 0
    HOST = 1
    USER = 2
    TEAM = 3


@dataclass(frozen=True, slots=True)
class Target:
    """Whom a job is for. ``multi``: broadcast, one result per eligible host (a target of
    type NONE is always a broadcast to all hosts)."""

    type: TargetType
    id: int = 0
    multi: bool = False

    def __post_init__(self) -> None:
        if self.type is TargetType.NONE:
            if not self.multi or self.id:
                raise ValueError("a job for no one in particular is a broadcast to all hosts")
        elif self.id <= 0:
            raise ValueError(f"a {self.type.name.lower()} target needs its id")

    def describe(self) -> str:
        if self.type is TargetType.NONE:
            return "broadcast to all hosts"
        what = f"{self.type.name.lower()} {self.id}"
        return f"broadcast to {what}" if self.multi else f"targeted at {what}"


@dataclass(frozen=True, slots=True)
class ResultState:
    server_state: int
    outcome: int
    validate_state: int


def targeted_instance_needed(target_nresults: int, results: Iterable[ResultState]) -> bool:
    """Whether a targeted (not broadcast) job needs another result, counted as the
    transitioner counts: unsent, in progress and successful results not found invalid.
    (The host's own results are excluded before: a host never gets two of one job.)"""
    have = sum(1 for r in results if _counts(r))
    return target_nresults - have > 0


def _counts(r: ResultState) -> bool:
    if r.server_state in (ServerState.UNSENT, ServerState.INACTIVE, ServerState.IN_PROGRESS):
        return True
    return (
        r.server_state == ServerState.OVER
        and r.outcome == Outcome.SUCCESS
        and r.validate_state != ValidateState.INVALID
    )


# create_work's options (BOINC's names), each naming what it targets.
TARGET_OPTIONS = {
    "target_host": (TargetType.HOST, False),
    "target_user": (TargetType.USER, False),
    "target_team": (TargetType.TEAM, False),
    "broadcast_user": (TargetType.USER, True),
    "broadcast_team": (TargetType.TEAM, True),
}


def target_from_options(options: dict[str, object]) -> Target | None:
    """The target create_work's ``--target_*`` / ``--broadcast*`` options give (at most one
    of them), or None. ``broadcast`` is a flag; the others carry an id (None: not given).
    Raises ValueError naming the options in conflict or the bad id."""
    given = [name for name in TARGET_OPTIONS if options.get(name) is not None]
    if options.get("broadcast"):
        given.append("broadcast")
    if len(given) > 1:
        raise ValueError(f"give at most one of --{' and --'.join(given)}")
    if not given:
        return None
    name = given[0]
    if name == "broadcast":
        return Target(TargetType.NONE, multi=True)
    kind, multi = TARGET_OPTIONS[name]
    value = options[name]
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"--{name} must be a positive id")
    return Target(kind, value, multi)


def next_result_name(wu_name: str, names: Iterable[str]) -> str:
    """``<wu>_<n>`` after the highest numeric suffix among ``names`` (``_0`` for the first)."""
    prefix = wu_name + "_"
    tails = (name[len(prefix) :] for name in names if name.startswith(prefix))
    return f"{prefix}{max((int(t) for t in tails if t.isascii() and t.isdigit()), default=-1) + 1}"


def broadcast_result_name(wu_name: str, host_id: int) -> str:
    """A broadcast job's result for one host: each host gets one, so its id names it."""
    return f"{wu_name}_h{host_id}"
