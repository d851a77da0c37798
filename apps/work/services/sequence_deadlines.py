"""The sequence-deadline daemon (seed 001: "A BOINC daemon process periodically checks for work
sequences for which some result, dispatched to the currently assigned host, has missed its
deadline. It then deassigns the work sequence, and prepares it for reassignment").

One pass (``sequence_deadlines_check``), at most ``limit`` sequences:

1. find assigned sequences with a result sent to the assigned host during this assignment that is
   past its deadline, errored, or was found invalid, and assigned ones whose host row was deleted;
2. find live sequences whose head is behind: the first unvalidated step has validated since
   (so progress, checkpoints and ends are right even if the validator does not call
   ``sequence_on_result_validated``);
3. find live open-ended sequences with every step dispatched (their hook may extend them);
4. find live sequences whose next step to send has no result waiting (the transitioner or the
   validator withdrew it; a new one is made);
5. run ``sequence_refresh`` on each, relocating in case 1: the sequence is deassigned, the results
   after its last validated restartable step are re-created, and the next host starts there.

Heads are locked with SKIP LOCKED on PostgreSQL, so an overlapping pass or a scheduler RPC holding
one is simply skipped; each refresh is idempotent.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db.models import Exists, OuterRef

from apps.work.domain.states import SequenceState
from apps.work.models import Result, WorkSequence
from apps.work.services.sequence_moves import WAITING, failed_results_query
from apps.work.services.sequence_progress import sequence_refresh
from apps.work.services.sequence_rows import LIVE_STATES

logger = logging.getLogger(__name__)


def sequence_deadlines_check(*, now: datetime, limit: int) -> int:
    """One daemon pass (steps in the module doc); returns the number of sequences changed."""
    failing = list(
        Result.objects.filter(failed_results_query(now))
        .order_by("workunit__sequence_id")
        .values_list("workunit__sequence_id", flat=True)
        .distinct()[:limit]
    )
    behind = list(
        WorkSequence.objects.filter(state__in=LIVE_STATES, first_unvalidated__canonical_result__isnull=False)
        .order_by("last_progress_time", "id")
        .values_list("id", flat=True)[:limit]
    )
    starving = list(
        WorkSequence.objects.filter(
            state__in=LIVE_STATES, expected_length__isnull=True, first_undispatched__isnull=True
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    stalled = list(
        WorkSequence.objects.filter(state__in=LIVE_STATES, first_undispatched__isnull=False)
        .exclude(
            Exists(
                Result.objects.filter(workunit_id=OuterRef("first_undispatched_id"), server_state__in=WAITING)
            )
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    orphaned = list(
        WorkSequence.objects.filter(state=SequenceState.ASSIGNED, assigned_host__isnull=True)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    todo = dict.fromkeys(failing + orphaned, True)
    for seq_id in behind + starving + stalled:
        todo.setdefault(seq_id, False)
    handled = 0
    for seq_id, relocate in list(todo.items())[:limit]:
        if sequence_refresh(sequence_id=seq_id, now=now, relocate_failed=relocate, skip_locked=True):
            handled += 1
    if handled:
        logger.info("sequence deadlines: %d sequence(s) changed", handled)
    return handled
