"""One pass of the working-set manager (docs/locality.md).

The working set is the few files (about N/M) that hosts holding no file are started
on. The scheduler marks files in which it found no sendable result ("files_no_work");
the manager drops those, clears markers whose file has work again (BOINC may create
more results later), tops the set up with files that have work, and cuts it back when
the target shrinks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WorkingSetUpdate:
    """The new working set and what changed; the service writes these back."""

    working_set: tuple[str, ...]  # sorted
    added: tuple[str, ...]
    removed: tuple[str, ...]
    cleared_no_work: tuple[str, ...]  # stale no-work markers to delete


def update_working_set(
    *,
    current: Iterable[str],
    unsent_counts: Mapping[str, int],
    no_work: Set[str],
    target_size: int,
    holders: Mapping[str, int] | None = None,
) -> WorkingSetUpdate:
    """Compute the next working set.

    ``unsent_counts`` has the number of unsent results of every locality file the
    project knows (0 allowed); a working-set file missing from it no longer exists and
    is dropped. ``no_work`` holds the files the scheduler marked as having no work.
    ``holders``: active hosts holding each file (absent = 0).

    Steps:
    1. A no-work marker on a file that has unsent results again is stale: clear it.
    2. Drop working-set files still marked no-work, and files the project no longer has.
    3. Cut the set back to ``target_size`` (``evict_order``), or top it up to it: first
       files whose work reappeared, then other files with work, each in name order.
    """
    current_set = set(current)
    with_work = {name for name, count in unsent_counts.items() if count > 0}
    stale = no_work & with_work
    still_no_work = set(no_work) - stale

    kept = {name for name in current_set if name in unsent_counts and name not in still_no_work}
    excess = len(kept) - target_size
    if excess > 0:
        kept -= set(evict_order(kept, unsent_counts, holders or {})[:excess])
    room = max(0, target_size - len(kept))
    reappeared = sorted(stale - kept)
    others = sorted(with_work - kept - stale)
    added = (reappeared + others)[:room]

    new_set = kept | set(added)
    return WorkingSetUpdate(
        working_set=tuple(sorted(new_set)),
        added=tuple(sorted(new_set - current_set)),
        removed=tuple(sorted(current_set - new_set)),
        cleared_no_work=tuple(sorted(stale)),
    )


def evict_order(
    files: Iterable[str], unsent_counts: Mapping[str, int], holders: Mapping[str, int]
) -> list[str]:
    """Working-set files in the order to drop them when the set is larger than N/M.

    Fewest holders first: a file no host holds yet costs no download and strands no
    half-sent workunit when it leaves (it comes back at a later top-up), while a file
    hosts are on keeps its place so that new hosts replace the ones that left it. Among
    files held alike, the one with the most work done (fewest unsent results) first: it
    would give a new host the least work for its download, and it leaves soon anyway.
    """
    return sorted(files, key=lambda name: (holders.get(name, 0), unsent_counts.get(name, 0), name))
