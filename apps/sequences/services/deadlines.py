"""The sequence-deadline daemon: BOINC's design has a daemon that periodically finds work
sequences with a result, dispatched to the assigned host, that missed its deadline, deassigns
them and prepares them for another host (docs/sequences.md).

One pass (``sequence_deadlines_check``) per project, at most ``limit`` sequences:

1. find assigned sequences with a result sent to the assigned host during this assignment that is
   past its deadline, errored, or was found invalid, and assigned ones whose host row was deleted;
2. find live sequences whose head is behind: the first unvalidated step has validated since
   (so progress, checkpoints and ends are right even if the validator does not call
   ``sequence_on_result_validated``);
3. find live open-ended sequences with every step dispatched (their hook may extend them);
4. find live sequences whose next step to send has no result waiting (the transitioner or the
   validator withdrew it; a new one is made), and live replica chains whose sibling ended or
   failed (they end with it);
5. run ``sequence_refresh`` on each, relocating in case 1: the sequence is deassigned, the results
   after its last validated restartable step are re-created, and the next host starts there.
   A refresh that raises is rolled back, logged and named in the pass's errors; the pass goes on
   with the others and the sequence is tried again next pass.

Heads are locked with SKIP LOCKED on PostgreSQL, so an overlapping pass or a scheduler RPC holding
one is simply skipped; each refresh is idempotent.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime
from typing import cast

from django.db.models import Exists, OuterRef

from apps.projects.models import Project
from apps.projects.services import DaemonPass
from apps.sequences.models import WorkSequence
from apps.sequences.services.moves import WAITING, failed_results_query
from apps.sequences.services.progress import sequence_refresh
from apps.sequences.services.rows import LIVE_STATES
from apps.work.domain.states import SequenceState
from apps.work.models import Result
from apps.work.services.daemons import PassOptions

logger = logging.getLogger(__name__)


def sequence_deadlines_daemon(project: Project, now: datetime, options: PassOptions) -> DaemonPass:
    """The pass as one of work's daemons: run_daemons and the Celery task run it per project."""
    return sequence_deadlines_check(project=project, now=now, limit=options.batch)


def sequence_deadlines_check(*, project: Project, now: datetime, limit: int) -> DaemonPass:
    """One daemon pass over the project's sequences (steps in the module doc): ``items`` counts
    the sequences changed, ``errors`` those whose refresh raised, named in ``message``."""
    handled = 0
    failed: dict[int, str] = {}  # sequence id -> its error
    for seq_id, relocate in _due(project, now, limit):
        try:
            changed = sequence_refresh(
                sequence_id=seq_id, now=now, relocate_failed=relocate, skip_locked=True
            )
        except Exception as exc:
            # Rolled back (one transaction per sequence) and tried again next pass; the others go on.
            logger.exception("sequence deadlines: sequence %s failed", seq_id)
            failed[seq_id] = f"{type(exc).__name__}: {exc}"
            continue
        handled += changed
    if handled:
        logger.info("sequence deadlines: %s: %d sequence(s) changed", project.slug, handled)
    return DaemonPass(items=handled, errors=len(failed), message=_failures_message(failed))


def _due(project: Project, now: datetime, limit: int) -> list[tuple[int, bool]]:
    """(sequence id, relocate?) of at most ``limit`` sequences: steps 1 to 4, relocations first."""
    in_project = WorkSequence.objects.filter(project=project)
    if not in_project.filter(state__in=LIVE_STATES).exists():
        # Every list below is of live sequences; without one, the results query alone would
        # read through a project's ordinary results every pass.
        return []
    failing = cast(  # results of steps only: the query matches them to their sequence
        "list[int]",
        list(
            Result.objects.filter(failed_results_query(now), project=project)
            .order_by("workunit__sequence_id")
            .values_list("workunit__sequence_id", flat=True)
            .distinct()[:limit]
        ),
    )
    behind = list(
        in_project.filter(state__in=LIVE_STATES, first_unvalidated__canonical_result__isnull=False)
        .order_by("last_progress_time", "id")
        .values_list("id", flat=True)[:limit]
    )
    starving = list(
        in_project.filter(
            state__in=LIVE_STATES, expected_length__isnull=True, first_undispatched__isnull=True
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    stalled = list(
        in_project.filter(state__in=LIVE_STATES, first_undispatched__isnull=False)
        .exclude(
            Exists(
                Result.objects.filter(workunit_id=OuterRef("first_undispatched_id"), server_state__in=WAITING)
            )
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    over = WorkSequence.objects.filter(state__in=(SequenceState.ENDED, SequenceState.ERROR))
    followers = list(
        in_project.filter(state__in=LIVE_STATES)
        .filter(
            Exists(over.filter(id=OuterRef("replica_of_id")))
            | Exists(over.filter(replica_of_id=OuterRef("id")))
            | Exists(over.filter(replica_of_id=OuterRef("replica_of_id")))
        )
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    orphaned = list(
        in_project.filter(state=SequenceState.ASSIGNED, assigned_host__isnull=True)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    relocations = list(dict.fromkeys(failing + orphaned))
    moving = set(relocations)
    refreshes = [i for i in dict.fromkeys(behind + starving + stalled + followers) if i not in moving]
    # No column remembers a sequence whose refresh keeps failing, so it cannot back off, and the
    # queries' fixed order would put it first in every pass. Shuffled within each group
    # (relocations still first), a slow failure does not spend the task's time limit ahead of
    # the same others every pass, and when more than ``limit`` are due, which wait changes.
    random.shuffle(relocations)
    random.shuffle(refreshes)
    return ([(i, True) for i in relocations] + [(i, False) for i in refreshes])[:limit]


def _failures_message(failed: dict[int, str]) -> str:
    """The DaemonRun's note: each failing sequence by name with its error (the first five)."""
    if not failed:
        return ""
    names = dict(WorkSequence.objects.filter(id__in=list(failed)[:5]).values_list("id", "name"))
    notes = [f"sequence {names.get(i, i)}: {error}" for i, error in list(failed.items())[:5]]
    more = f" (+{len(failed) - 5} more)" if len(failed) > 5 else ""
    return "; ".join(notes) + more
