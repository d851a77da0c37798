"""Project hooks used by the tests (App.sequence_hook names them by dotted path)."""

from __future__ import annotations

from apps.sequences.services import SequenceDecision, SequenceProgress, extend_open_ended

FINAL_LENGTH = 8


def fold_to_eight(progress: SequenceProgress) -> SequenceDecision:
    """Extend like the default, but make step 8 the last (it uploads the final state)."""
    if progress.ended:
        return SequenceDecision()
    if progress.n_steps + 3 >= FINAL_LENGTH and progress.n_steps - progress.n_dispatched < 2:
        return SequenceDecision(extend_by=FINAL_LENGTH - progress.n_steps, final=True)
    return extend_open_ended(progress)


def broken(progress: SequenceProgress) -> SequenceDecision:
    raise RuntimeError("the project's hook is broken")
