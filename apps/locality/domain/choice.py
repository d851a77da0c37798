"""The locality pick (docs/locality.md): which file to work on and which results to send.

Hosts that already hold large files get more results for those files; hosts holding
none get a file from the working set, or a deterministic fallback when the working-set
pick is excluded for the user. All functions are pure: randomness comes in as a
``random.Random`` and every input is a plain value.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from enum import Enum
from typing import Final, Literal

# --- files already on the host ----------------------------------------------------------


def order_host_files(
    file_names: Iterable[str], *, sorted_order: bool, rng: random.Random | None = None
) -> list[str]:
    """The order in which to search the host's files for work.

    ``sorted_order`` is ``locality_scheduling_sorted_order``; otherwise the order is
    random so hosts with the same files do not all drain the same file first.
    """
    names = sorted(set(file_names))
    if sorted_order:
        return names
    if rng is None:
        raise ValueError("random file order needs an rng")
    rng.shuffle(names)  # shuffling the sorted list keeps the result a function of the rng only
    return names


@dataclass(frozen=True, slots=True)
class LocalityCandidate:
    """An unsent result of a locality workunit."""

    result_id: int
    workunit_id: int
    file_name: str


def next_results_for_file(
    candidates: Iterable[LocalityCandidate],
    *,
    file_name: str,
    last_sent_result_id: int | None,
    one_result_per_user_per_wu: bool,
    user_workunit_ids: Set[int] = frozenset(),
    limit: int,
) -> list[int]:
    """Result ids of ``file_name`` to try sending to the user, in the order to try them.

    BOINC's design keeps this invariant: for a user/file pair results go out in increasing id order,
    so only ids above the user's last sent one qualify, and the scan can resume from
    there without remembering skipped results. With ``one_result_per_user_per_wu``,
    workunits the user already has are skipped and at most one result per workunit
    is returned. A result the caller then fails to send is passed over for this user
    for good (BOINC does the same).
    """
    if limit <= 0:
        return []
    floor = -1 if last_sent_result_id is None else last_sent_result_id
    eligible = sorted(
        {c.result_id: c for c in candidates if c.file_name == file_name and c.result_id > floor}.values(),
        key=lambda c: c.result_id,
    )
    chosen: list[int] = []
    taken_wus: set[int] = set()
    for candidate in eligible:
        if one_result_per_user_per_wu:
            if candidate.workunit_id in user_workunit_ids or candidate.workunit_id in taken_wus:
                continue
            taken_wus.add(candidate.workunit_id)
        chosen.append(candidate.result_id)
        if len(chosen) == limit:
            break
    return chosen


class NoResultsAction(Enum):
    """What to do about a file on the host that yielded no sendable result."""

    KEEP = "keep"  # unsent results exist, just none for this host/user now
    REQUEST_WORK = "request_work"  # set need_work, sleep wait_period, query once more
    NO_WORK = "no_work"  # mark files_no_work; keep the file, unfinished workunits may spawn results
    DELETE = "delete"  # mark files_no_work and send <delete_file_info> for it

    @property
    def signals_need_work(self) -> bool:
        return self is NoResultsAction.REQUEST_WORK

    @property
    def retries_after_wait(self) -> bool:
        return self is NoResultsAction.REQUEST_WORK

    @property
    def marks_no_work(self) -> bool:
        return self in (NoResultsAction.NO_WORK, NoResultsAction.DELETE)

    @property
    def deletes_from_host(self) -> bool:
        return self is NoResultsAction.DELETE


def decide_file_without_results(
    *,
    has_unsent_results: bool,
    no_work_available: bool,
    more_to_come: bool,
    wait_period: float,
    already_waited: bool,
) -> NoResultsAction:
    """The design's handling of a host's file with no sendable results.

    ``has_unsent_results``: the file still has unsent results (excluded for this user,
    or not feasible for this host). ``no_work_available``: the project marked that no
    more workunits can be made for the file. ``more_to_come``: unfinished workunits of
    the file may still get new results from the transitioner. ``wait_period``:
    ``locality_scheduling_wait_period``; > 0 means on-demand generation is in use.
    ``already_waited``: this is the one additional attempt, after sleeping.

    The design waits once (notify the generator, sleep, query again): when the additional attempt
    (or a wait that ended without work) still finds nothing, the file is handled as one
    with no results available, as without on-demand generation (marked files_no_work,
    and deleted unless unfinished workunits may still spawn results). The need-work
    signal stays pending, so work the generator makes later clears the marker again.
    """
    if has_unsent_results:
        return NoResultsAction.KEEP
    if wait_period > 0 and not no_work_available and not already_waited:
        return NoResultsAction.REQUEST_WORK
    if more_to_come:
        return NoResultsAction.NO_WORK
    return NoResultsAction.DELETE


# --- hosts with no files ------------------------------------------------------------------


class Fallback(Enum):
    """Sentinel: the working set gave nothing usable; use ``deterministic_fallback_file``."""

    FALLBACK = "fallback"


FALLBACK: Final = Fallback.FALLBACK


def working_set_size(active_hosts: int, target_nresults: int) -> int:
    """N/M files (N active hosts, M target results), at least 1.

    Rounded down so that each file reaches at least M hosts, which lets one set of
    hosts finish all of a file's results.
    """
    if target_nresults < 1:
        raise ValueError("target_nresults must be at least 1")
    if active_hosts < 0:
        raise ValueError("active_hosts must not be negative")
    return max(1, active_hosts // target_nresults)


def choose_file_for_new_host(
    working_set: Iterable[str],
    rng: random.Random,
    excluded_for_user: Set[str] = frozenset(),
    *,
    attempts: int = 1,
) -> str | Literal[Fallback.FALLBACK]:
    """A uniformly random working-set file for a host holding none, else FALLBACK.

    BOINC's design picks once and falls back if the pick is excluded for the user; Einstein's
    scheduler tries up to 5 times (``attempts``) before falling back.
    """
    files = sorted(set(working_set))
    if not files:
        return FALLBACK
    for _ in range(max(1, attempts)):
        pick = rng.choice(files)
        if pick not in excluded_for_user:
            return pick
    return FALLBACK


def least_held_files(working_set: Iterable[str], holders: Mapping[str, int]) -> set[str]:
    """The working-set files the fewest active hosts hold (``holders``; absent = 0).

    BOINC's design picks uniformly (randomly or sequentially) from the working set; picking
    uniformly among the least-held files is the sequential variant without shared
    state: successive new hosts go round the set, so each file reaches M hosts before
    any gets M + 1, instead of the Poisson spread of independent random picks.
    """
    files = set(working_set)
    if not files:
        return set()
    fewest = min(holders.get(name, 0) for name in files)
    return {name for name in files if holders.get(name, 0) == fewest}


def choose_balanced_file_for_new_host(
    working_set: Iterable[str],
    holders: Mapping[str, int],
    rng: random.Random,
    *,
    target_hosts: int,
) -> str | Literal[Fallback.FALLBACK]:
    """A uniform pick among the least-held working-set files, else FALLBACK.

    FALLBACK also when even the least-held file already has ``target_hosts`` (M)
    holders: the set is saturated (its files' hosts are still on them), and a host
    joining one would only split work M hosts can finish. The design wants each file on
    about M hosts to keep downloads down, and picks inside the set only so that they
    spread over it; the caller then starts the host on a file outside the set. (A
    uniform pick regardless doubles the downloads per file in the simulation, because
    the set lags behind finished files between working-set manager passes.)
    """
    files = least_held_files(working_set, holders)
    if not files or min(holders.get(name, 0) for name in files) >= target_hosts:
        return FALLBACK
    return rng.choice(sorted(files))


def fallback_file_for_host(
    host_id: int,
    unsent: Mapping[str, int],
    excluded_for_user: Set[str] = frozenset(),
    *,
    holders: Mapping[str, int],
    target_hosts: int,
) -> str | None:
    """The deterministic choice outside the working set, given each file's unsent results.

    Files with fewer than M holders first (``deterministic_fallback_file`` over them,
    so hosts spread instead of flocking). When every file with work already has M
    holders (the work is running out), the file with the most unsent results per
    holder: a host that must join a started file then gets the longest run of work
    from its download, instead of a file about to run out, which would send it looking
    (and downloading) again at its next request.
    """
    allowed = {name for name, count in unsent.items() if count > 0} - set(excluded_for_user)
    under = {name for name in allowed if holders.get(name, 0) < target_hosts}
    if under:
        return deterministic_fallback_file(host_id, under)
    if not allowed:
        return None
    return max(
        sorted(allowed),
        key=lambda name: (unsent[name] / (holders.get(name, 0) + 1), _host_file_weight(host_id, name)),
    )


def _host_file_weight(host_id: int, file_name: str) -> bytes:
    return hashlib.blake2b(f"{host_id}\x00{file_name}".encode(), digest_size=8).digest()


def deterministic_fallback_file(
    host_id: int,
    files_with_work: Iterable[str],
    excluded_for_user: Set[str] = frozenset(),
) -> str | None:
    """A file for a host whose working-set pick failed, or None if none is allowed.

    Rendezvous hashing: each host ranks the files by a hash of (host id, file name)
    and takes its top allowed one. The result depends only on the inputs, different
    hosts spread evenly over the files instead of flocking to one, and a file running
    out only moves the hosts that had picked it.
    """
    allowed = set(files_with_work) - set(excluded_for_user)
    if not allowed:
        return None
    return max(sorted(allowed), key=lambda name: _host_file_weight(host_id, name))


def choose_locality_file(
    *,
    host_id: int,
    working_set: Iterable[str],
    files_with_work: Iterable[str],
    excluded_for_user: Set[str] = frozenset(),
    rng: random.Random,
    attempts: int = 1,
) -> str | None:
    """Working-set pick, then the deterministic fallback: the whole no-files path."""
    pick = choose_file_for_new_host(working_set, rng, excluded_for_user, attempts=attempts)
    if isinstance(pick, str):
        return pick
    return deterministic_fallback_file(host_id, files_with_work, excluded_for_user)
