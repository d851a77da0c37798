"""The validator's decisions (BOINC sched/validator.cpp and validate_util2.cpp ``check_set``).

The service reads the output files of a workunit's results and passes each result's contents as
an opaque ``payload``; this module decides, with a pluggable ``compare(a, b) -> bool`` and an
optional ``init(candidate) -> bool`` (is the output readable and well formed?), which result is
canonical and what every result's validate_state becomes.

* Case A, the workunit already has a canonical result: each new success is compared with it and
  becomes VALID or INVALID (``check_against_canonical``).
* Case B, no canonical result yet: ``check_set`` looks for a result that agrees with at least
  ``min_quorum`` results (itself included). With ``min_quorum == 1`` a single readable result is
  its own quorum, which is single-result validation.

``plan_validation`` wraps both and adds the workunit changes BOINC makes: on consensus the
canonical result is set, the workunit goes to the assimilator, unsent siblings are no longer
needed and transition_time becomes "never"; without consensus, too many successes sets
TOO_MANY_SUCCESS_RESULTS and enough successes raises target_nresults so the transitioner makes
one more instance. The service clears need_validate after applying either plan.

``compare`` must be symmetric: each pair is compared once and the answer reused. A transient
failure (output not readable *yet*) is the service's business: it should not call this module
and push transition_time with ``transient_retry_time`` instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from apps.work.domain.states import TRANSITION_NEVER, ErrorMask, ValidateState

P = TypeVar("P")

TRANSIENT_RETRY_SECONDS = 6 * 3600  # BOINC retries a transient validator error within 6 hours


@dataclass(frozen=True, slots=True)
class ValidationCandidate(Generic[P]):
    """A result that reported SUCCESS, with its output contents."""

    id: int
    payload: P
    validate_state: ValidateState = ValidateState.INIT


@dataclass(frozen=True, slots=True)
class CheckSetOutcome:
    """What ``check_set``/``check_against_canonical`` decided; ids refer to the candidates."""

    canonical_result_id: int | None
    validate_states: tuple[tuple[int, ValidateState], ...]  # only results whose state changes
    validate_error_result_ids: tuple[int, ...] = ()  # outcome -> VALIDATE_ERROR, state INVALID
    n_viable: int = 0  # readable candidates


@dataclass(frozen=True, slots=True)
class ValidationWorkunit:
    """The workunit fields the validator reads."""

    id: int
    min_quorum: int = 1
    target_nresults: int = 1
    max_success_results: int = 1
    canonical_result_id: int | None = None
    transition_time: int = 0


@dataclass(frozen=True, slots=True)
class ValidationPlan:
    """The result and workunit changes; ``None``/``False`` means "leave as is"."""

    workunit_id: int
    outcome: CheckSetOutcome
    canonical_result_id: int | None = None  # newly chosen canonical result (case B)
    assimilate_ready: bool = False
    unsent_didnt_need: bool = False  # UNSENT siblings -> OVER/DIDNT_NEED
    error_mask_set: ErrorMask = ErrorMask.NONE
    target_nresults: int | None = None
    transition_time: int | None = None


Compare = Callable[[P, P], bool]
Init = Callable[[ValidationCandidate[P]], bool]
# A project's own check_set over the readable candidates: (canonical id or None, valid ids).
Choose = Callable[[Sequence[ValidationCandidate[P]]], tuple[int | None, Sequence[int]]]


def _readable(
    results: Sequence[ValidationCandidate[P]], init: Init[P] | None
) -> tuple[list[ValidationCandidate[P]], tuple[int, ...]]:
    if init is None:
        return list(results), ()
    readable = [(r, init(r)) for r in results]
    return [r for r, ok in readable if ok], tuple(r.id for r, ok in readable if not ok)


def _state_changes(
    results: Sequence[ValidationCandidate[P]], new_states: dict[int, ValidateState]
) -> tuple[tuple[int, ValidateState], ...]:
    return tuple((r.id, new_states[r.id]) for r in results if new_states[r.id] != r.validate_state)


def check_set(
    results: Sequence[ValidationCandidate[P]],
    *,
    min_quorum: int,
    compare: Compare[P],
    init: Init[P] | None = None,
    choose: Choose[P] | None = None,
) -> CheckSetOutcome:
    """Case B: find a canonical result among the viable ``results`` (SUCCESS, INIT/INCONCLUSIVE).

    Unreadable results get VALIDATE_ERROR. The first result (in the given order) that agrees
    with at least ``min_quorum`` readable results (itself included) becomes canonical; those
    that agree with it become VALID and the rest INVALID. Without consensus every readable
    result is INCONCLUSIVE. ``choose`` (a project's check_set) replaces the search: it names
    the canonical result and the valid ones, or None.
    """
    good, bad = _readable(results, init)
    new_states = {r_id: ValidateState.INVALID for r_id in bad}
    if choose is not None:
        return _chosen(results, good, bad, new_states, choose)
    agree: dict[tuple[int, int], bool] = {}

    def same(i: int, j: int) -> bool:
        key = (min(i, j), max(i, j))
        if key not in agree:
            agree[key] = compare(good[key[0]].payload, good[key[1]].payload)
        return agree[key]

    canonical: int | None = None
    if len(good) >= min_quorum:
        for i in range(len(good)):
            matches = [j for j in range(len(good)) if j == i or same(i, j)]
            if len(matches) >= min_quorum:
                canonical = good[i].id
                for j in range(len(good)):
                    new_states[good[j].id] = ValidateState.VALID if j in matches else ValidateState.INVALID
                break
    if canonical is None:
        new_states.update((r.id, ValidateState.INCONCLUSIVE) for r in good)
    return CheckSetOutcome(
        canonical_result_id=canonical,
        validate_states=_state_changes(results, new_states),
        validate_error_result_ids=bad,
        n_viable=len(good),
    )


def _chosen(
    results: Sequence[ValidationCandidate[P]],
    good: list[ValidationCandidate[P]],
    bad: tuple[int, ...],
    new_states: dict[int, ValidateState],
    choose: Choose[P],
) -> CheckSetOutcome:
    canonical, valid_ids = choose(good) if good else (None, ())
    if canonical is None:
        new_states.update((r.id, ValidateState.INCONCLUSIVE) for r in good)
    else:
        valid = {canonical, *valid_ids}
        new_states.update(
            (r.id, ValidateState.VALID if r.id in valid else ValidateState.INVALID) for r in good
        )
    return CheckSetOutcome(
        canonical_result_id=canonical,
        validate_states=_state_changes(results, new_states),
        validate_error_result_ids=bad,
        n_viable=len(good),
    )


def check_against_canonical(
    canonical: ValidationCandidate[P],
    results: Sequence[ValidationCandidate[P]],
    *,
    compare: Compare[P],
    init: Init[P] | None = None,
) -> CheckSetOutcome:
    """Case A: each new success is VALID if it matches the canonical result, else INVALID."""
    others = [r for r in results if r.id != canonical.id]
    good, bad = _readable(others, init)
    new_states = {r_id: ValidateState.INVALID for r_id in bad}
    for r in good:
        new_states[r.id] = (
            ValidateState.VALID if compare(canonical.payload, r.payload) else ValidateState.INVALID
        )
    return CheckSetOutcome(
        canonical_result_id=canonical.id,
        validate_states=_state_changes(others, new_states),
        validate_error_result_ids=bad,
        n_viable=len(good),
    )


def plan_validation(
    wu: ValidationWorkunit,
    results: Sequence[ValidationCandidate[P]],
    *,
    compare: Compare[P],
    now: float,
    init: Init[P] | None = None,
    canonical: ValidationCandidate[P] | None = None,
    choose: Choose[P] | None = None,
) -> ValidationPlan:
    """One validator pass over ``wu``: case A when ``wu`` has a canonical result, else case B.

    In case A pass the canonical result (with its payload) as ``canonical``.
    """
    if wu.canonical_result_id is not None:
        if canonical is None or canonical.id != wu.canonical_result_id:
            raise ValueError("case A needs the canonical result's payload")
        outcome = check_against_canonical(canonical, results, compare=compare, init=init)
        # A validate error frees a slot the transitioner may want to refill.
        retry = int(now) if outcome.validate_error_result_ids else None
        return ValidationPlan(wu.id, outcome, transition_time=_lowered(retry, wu.transition_time))

    outcome = check_set(results, min_quorum=wu.min_quorum, compare=compare, init=init, choose=choose)
    if outcome.canonical_result_id is not None:
        # Not transitioning now is deliberate: the transitioner racing the validator's writes
        # is the race BOINC avoids the same way.
        return ValidationPlan(
            wu.id,
            outcome,
            canonical_result_id=outcome.canonical_result_id,
            assimilate_ready=True,
            unsent_didnt_need=True,
            transition_time=_changed(TRANSITION_NEVER, wu.transition_time),
        )
    mask = ErrorMask.NONE
    target: int | None = None
    if outcome.n_viable > wu.max_success_results:
        mask |= ErrorMask.TOO_MANY_SUCCESS_RESULTS
    if outcome.n_viable >= wu.target_nresults:
        target = outcome.n_viable + 1
    needs_transition = bool(mask) or target is not None or bool(outcome.validate_error_result_ids)
    return ValidationPlan(
        wu.id,
        outcome,
        error_mask_set=mask,
        target_nresults=target,
        transition_time=_lowered(int(now) if needs_transition else None, wu.transition_time),
    )


def transient_retry_time(transition_time: int, now: float) -> int:
    """transition_time after a transient error (unreadable file server): retry within 6 h."""
    return min(transition_time, int(now) + TRANSIENT_RETRY_SECONDS)


def _changed(new: int, old: int) -> int | None:
    return None if new == old else new


def _lowered(new: int | None, old: int) -> int | None:
    return None if new is None or new >= old else new


def bitwise_equal(a: bytes, b: bytes) -> bool:
    """The sample_bitwise validator: outputs must be byte-for-byte identical."""
    return a == b


_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def _number(token: bytes) -> float | None:
    # A strict grammar: float() alone would also take "1_000", which is not a number here.
    return float(token) if _NUMBER.fullmatch(token) else None


def tolerant_numeric_equal(a: bytes, b: bytes, *, rel_tol: float, abs_tol: float) -> bool:
    """Whitespace-separated tokens pairwise equal: numbers within tolerance, other tokens exactly.

    Numbers compare with ``math.isclose`` (symmetric); NaN matches only NaN, an infinity only
    the same infinity. A number never matches a non-number, and token counts must agree.
    """
    left, right = a.split(), b.split()
    if len(left) != len(right):
        return False
    for x_tok, y_tok in zip(left, right, strict=True):
        x, y = _number(x_tok), _number(y_tok)
        if x is None or y is None:
            if x is not None or y is not None or x_tok != y_tok:
                return False
        elif math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif not math.isclose(x, y, rel_tol=rel_tol, abs_tol=abs_tol):
            return False
    return True
