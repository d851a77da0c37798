"""Work sequences (seed 001): the services, in one place for callers.

* creation: ``sequence_create`` (create_work --sequence, the admin, the operators' API) and
  ``sequence_extend``;
* progress: ``sequence_on_result_validated`` (the validator calls it per validated workunit) and
  ``sequence_refresh``;
* the sequence-deadline daemon: ``sequence_deadlines_check`` (Celery task work.sequence_deadlines);
* operators: ``sequence_deassign_many`` (relocate), ``sequence_end_many``, ``sequence_end``;
* the scheduler: ``sequence_relocate`` when a host lost its sequence.

The rules are pure functions in apps.work.domain.sequences; the modules here load rows, call them
and write the plans back: sequence_rows (rows <-> snapshots), sequence_steps (step workunits,
results and state files), sequence_create, sequence_moves (relocation and ending),
sequence_progress, sequence_replica_check (redundancy), sequence_hooks, sequence_deadlines.
"""

from apps.work.services.sequence_create import SequenceSpec, sequence_create, sequence_extend
from apps.work.services.sequence_deadlines import sequence_deadlines_check
from apps.work.services.sequence_hooks import SequenceDecision, SequenceProgress, extend_open_ended
from apps.work.services.sequence_progress import (
    sequence_deassign_many,
    sequence_end,
    sequence_end_many,
    sequence_on_result_validated,
    sequence_refresh,
    sequence_relocate,
)

__all__ = [
    "SequenceDecision",
    "SequenceProgress",
    "SequenceSpec",
    "extend_open_ended",
    "sequence_create",
    "sequence_deadlines_check",
    "sequence_deassign_many",
    "sequence_end",
    "sequence_end_many",
    "sequence_extend",
    "sequence_on_result_validated",
    "sequence_refresh",
    "sequence_relocate",
]
