"""One pass of the working-set manager (seed 004).

The working set is the few files (about N/M) that hosts holding no file are started
on. The scheduler marks files in which it found no sendable result ("files_no_work");
the manager drops those, clears markers whose file has work again (BOINC may create
more results later), and tops the set up with files that have work.
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
) -> WorkingSetUpdate:
    """Compute the next working set.

    ``unsent_counts`` has the number of unsent results of every locality file the
    project knows (0 allowed); a working-set file missing from it no longer exists and
    is dropped. ``no_work`` holds the files the scheduler marked as having no work.

    Steps:
    1. A no-work marker on a file that has unsent results again is stale: clear it.
    2. Drop working-set files still marked no-work, and files the project no longer has.
    3. Top up to ``target_size``: first files whose work reappeared, then other files
       with work, each group in increasing name order.
    Files that still have work are never evicted to shrink the set; it shrinks to a
    lower target as its files run out, so hosts started on a file are not orphaned.
    """
    current_set = set(current)
    with_work = {name for name, count in unsent_counts.items() if count > 0}
    stale = no_work & with_work
    still_no_work = set(no_work) - stale

    kept = {name for name in current_set if name in unsent_counts and name not in still_no_work}
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
