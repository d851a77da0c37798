"""The tail of a batch: its last few unfinished workunits, which hold up the whole batch.

Their unsent results are raised to the project's ``reliable_on_priority``, so they go
first, to reliable hosts, with the reduced deadline, like retries.
"""

from __future__ import annotations


def batch_tail(*, unfinished: int, total: int, fraction: float) -> bool:
    """Whether a batch is in its tail: some but at most ``fraction`` of its workunits unfinished."""
    return fraction > 0 and total > 0 and 0 < unfinished <= fraction * total
