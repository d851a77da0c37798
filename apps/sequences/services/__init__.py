"""Work sequences (docs/sequences.md): the services, in one place for callers.

* creation: ``sequence_create`` (create_work --sequence, the admin, the operators' API; it checks
  max_result_time against the delay-bound cap here, every caller coming through this module) and
  ``sequence_extend``;
* progress: ``sequence_on_result_validated`` (the validator calls it per validated workunit, as
  registered in apps.sequences.apps) and ``sequence_refresh``;
* the sequence-deadline daemon: ``sequence_deadlines_check``, and ``sequence_deadlines_daemon`` as
  one of work's daemons (Celery task work.sequence_deadlines);
* operators: ``sequence_deassign_many`` (relocate), ``sequence_end_many``, ``sequence_end``,
  ``sequence_running_steps`` (what ending would abort);
* the scheduler: ``sequence_relocate`` when a host lost its sequence.

The rules are pure functions in apps.sequences.domain.rules; the modules here load rows, call them
and write the plans back: rows (rows <-> snapshots), steps (step workunits, results and state
files), create, moves (relocation and ending), progress, replica_check (redundancy), hooks,
deadlines.
"""

from __future__ import annotations

from datetime import datetime

from apps.applications.domain.job_bounds import MAX_DELAY_BOUND, delay_bound_problem
from apps.applications.models import App
from apps.projects.models import Project
from apps.sequences.models import WorkSequence
from apps.sequences.services.create import SequenceSpec, sequence_extend
from apps.sequences.services.create import sequence_create as sequence_rows_create
from apps.sequences.services.deadlines import sequence_deadlines_check, sequence_deadlines_daemon
from apps.sequences.services.hooks import SequenceDecision, SequenceProgress, extend_open_ended
from apps.sequences.services.progress import (
    sequence_deassign_many,
    sequence_end,
    sequence_end_many,
    sequence_on_result_validated,
    sequence_refresh,
    sequence_relocate,
    sequence_running_steps,
)
from apps.sequences.services.steps import default_delay_bound
from apps.work.services.create import WorkError

__all__ = [
    "SequenceDecision",
    "SequenceProgress",
    "SequenceSpec",
    "extend_open_ended",
    "sequence_create",
    "sequence_deadlines_check",
    "sequence_deadlines_daemon",
    "sequence_deassign_many",
    "sequence_end",
    "sequence_end_many",
    "sequence_extend",
    "sequence_on_result_validated",
    "sequence_refresh",
    "sequence_relocate",
    "sequence_running_steps",
]


def sequence_create(
    *, project: Project, app: App, spec: SequenceSpec, now: datetime | None = None
) -> WorkSequence:
    """Create the sequence (and its replica chains), its first steps and their results, after
    refusing a max_result_time that no step's deadline could follow (the scheduler gives the
    k-th step queued on a host k max_result_times, or its delay_bound, whichever is longer)."""
    problem = delay_bound_problem("max_result_time", spec.max_result_time)
    if problem is not None:
        raise WorkError(problem)
    if not spec.job.delay_bound and default_delay_bound(spec.max_result_time) > MAX_DELAY_BOUND:
        raise WorkError(
            f"max_result_time {spec.max_result_time:.0f} s gives each step a default delay_bound of "
            f"{default_delay_bound(spec.max_result_time):.0f} s, more than the maximum "
            f"{MAX_DELAY_BOUND} s: give the steps a delay_bound, or a shorter max_result_time"
        )
    return sequence_rows_create(project=project, app=app, spec=spec, now=now)
