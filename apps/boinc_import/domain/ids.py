"""Which Cobblestone ids BOINC rows get.

BOINC ids are kept when no row of the target table holds any id of the source's range:
then attached clients keep their host ids and web links keep working. Otherwise (the
portal already hosts other projects with rows there) every row of the table is shifted
by one offset above everything taken, so references between tables still map with one
addition and no lookup table.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class IdPlan:
    """Cobblestone id = BOINC id + ``offset``, for BOINC ids up to ``reserved_max_id``."""

    offset: int
    reserved_max_id: int

    @property
    def last_target_id(self) -> int:
        return self.reserved_max_id + self.offset


def plan_ids(*, source_min: int, source_max: int, range_taken: bool, next_free: int) -> IdPlan:
    """Keep the ids if [source_min, source_max] is free in the target table, else shift
    the range to start at ``next_free`` (the first id above every taken one)."""
    if source_max < source_min:  # an empty table
        return IdPlan(offset=0, reserved_max_id=0)
    offset = next_free - source_min if range_taken else 0
    return IdPlan(offset=offset, reserved_max_id=source_max)


@dataclass(slots=True)
class IdMap:
    """The imported rows of one table: BOINC id → Cobblestone id, for references."""

    offset: int = 0
    imported: set[int] = field(default_factory=set)

    def target(self, source_id: int) -> int | None:
        """The Cobblestone id of an imported row, or None if that row was not imported."""
        return source_id + self.offset if source_id in self.imported else None

    def add(self, source_id: int) -> None:
        self.imported.add(source_id)
