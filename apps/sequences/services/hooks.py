"""The project's say in a sequence's future: in BOINC's design the project's result handling,
after a step's result, may add steps to the sequence or end it (docs/sequences.md).

An app names a hook in ``App.sequence_hook`` (a dotted path); it is called with a
``SequenceProgress`` after a step of one of the app's sequences validated (and by the
sequence-deadline daemon when an open-ended sequence has every step dispatched), and returns a
``SequenceDecision``. Hooks run inside the caller's transaction and must be quick; they read files
through the result ids they are given, and must not write sequence rows themselves.

The default, ``extend_open_ended``, is the folding example's work generator: an open-ended
sequence is kept ``EXTEND_BY`` steps ahead of what its host has, until an operator (admin, API,
``sequence_end_many``) or a project hook ends it. Fixed-length sequences are left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.utils.module_loading import import_string

from apps.sequences.domain.rules import MIN_AHEAD

logger = logging.getLogger(__name__)

EXTEND_BY = 3


@dataclass(frozen=True, slots=True)
class SequenceProgress:
    """What a hook sees of a sequence."""

    sequence_id: int
    name: str
    app_name: str
    n_steps: int  # known so far
    n_validated: int  # steps 0..n_validated-1 have a validated result
    n_dispatched: int  # steps 0..n_dispatched-1 went to the assigned host
    expected_length: int | None  # None: open-ended
    ended: bool  # no step will be added
    latest_validated_result_id: int | None  # canonical result of step n_validated-1


@dataclass(frozen=True, slots=True)
class SequenceDecision:
    """``extend_by`` steps are appended (``final``: the last uploads the final state and the
    sequence ends once it validates); ``end`` ends the sequence now (unsent steps are dropped and
    the host aborts running ones)."""

    extend_by: int = 0
    final: bool = False
    end: bool = False


CONTINUE = SequenceDecision()
SequenceHook = Callable[[SequenceProgress], SequenceDecision]


def extend_open_ended(progress: SequenceProgress) -> SequenceDecision:
    """Keep an open-ended sequence ``EXTEND_BY`` steps ahead once fewer than MIN_AHEAD are left."""
    if progress.ended or progress.expected_length is not None:
        return CONTINUE
    if progress.n_steps - progress.n_dispatched < MIN_AHEAD:
        return SequenceDecision(extend_by=EXTEND_BY)
    return CONTINUE


def hook_for(path: str) -> SequenceHook:
    if not path:
        return extend_open_ended
    hook: SequenceHook = import_string(path)
    return hook


def hook_decide(path: str, progress: SequenceProgress) -> SequenceDecision:
    """Call the hook; a broken hook is logged and changes nothing (the validator must go on)."""
    try:
        decision = hook_for(path)(progress)
    except Exception:
        logger.exception("sequence hook %r failed for %s", path, progress.name)
        return CONTINUE
    if not isinstance(decision, SequenceDecision) or decision.extend_by < 0:
        logger.error("sequence hook %r returned %r for %s; ignored", path, decision, progress.name)
        return CONTINUE
    return decision
