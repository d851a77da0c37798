"""The validator's pure decisions (apps/work/domain/validation.py)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.work.domain.states import TRANSITION_NEVER, ErrorMask, ValidateState
from apps.work.domain.validation import (
    ValidationCandidate,
    ValidationWorkunit,
    bitwise_equal,
    check_against_canonical,
    check_set,
    plan_validation,
    tolerant_numeric_equal,
    transient_retry_time,
)

NOW = 1_700_000_000.0
VALID, INVALID, INCONCLUSIVE = ValidateState.VALID, ValidateState.INVALID, ValidateState.INCONCLUSIVE


def cands(*payloads: bytes) -> list[ValidationCandidate[bytes]]:
    return [ValidationCandidate(i + 1, p) for i, p in enumerate(payloads)]


def readable(c: ValidationCandidate[bytes]) -> bool:
    return c.payload != b"unreadable"


def test_agreeing_pair_reaches_quorum_with_the_first_as_canonical() -> None:
    out = check_set(cands(b"a", b"a"), min_quorum=2, compare=bitwise_equal)
    assert out.canonical_result_id == 1
    assert out.validate_states == ((1, VALID), (2, VALID))


def test_result_disagreeing_with_the_consensus_is_invalid() -> None:
    out = check_set(cands(b"b", b"a", b"a"), min_quorum=2, compare=bitwise_equal)
    assert out.canonical_result_id == 2
    assert out.validate_states == ((1, INVALID), (2, VALID), (3, VALID))


def test_no_consensus_marks_results_inconclusive() -> None:
    out = check_set(cands(b"a", b"b"), min_quorum=2, compare=bitwise_equal)
    assert out.canonical_result_id is None
    assert out.validate_states == ((1, INCONCLUSIVE), (2, INCONCLUSIVE))


def test_already_inconclusive_result_is_not_listed_again() -> None:
    results = [ValidationCandidate(1, b"a", INCONCLUSIVE), ValidationCandidate(2, b"b")]
    out = check_set(results, min_quorum=2, compare=bitwise_equal)
    assert out.validate_states == ((2, INCONCLUSIVE),)


def test_unreadable_result_gets_validate_error_and_invalid() -> None:
    out = check_set(cands(b"unreadable", b"a"), min_quorum=1, compare=bitwise_equal, init=readable)
    assert out.validate_error_result_ids == (1,)
    assert out.validate_states == ((1, INVALID), (2, VALID))


def test_unreadable_result_does_not_count_towards_quorum() -> None:
    out = check_set(cands(b"unreadable", b"a"), min_quorum=2, compare=lambda a, b: True, init=readable)
    assert (out.canonical_result_id, out.n_viable) == (None, 1)


def test_single_result_with_quorum_one_is_its_own_canonical() -> None:
    out = check_set(cands(b"x"), min_quorum=1, compare=bitwise_equal)
    assert (out.canonical_result_id, out.validate_states) == (1, ((1, VALID),))


def test_each_pair_is_compared_at_most_once() -> None:
    calls: list[tuple[bytes, bytes]] = []

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return False

    check_set(cands(b"a", b"b", b"c"), min_quorum=2, compare=counting)
    assert len(calls) == 3


def test_new_result_matching_canonical_is_valid() -> None:
    out = check_against_canonical(ValidationCandidate(9, b"a"), cands(b"a"), compare=bitwise_equal)
    assert (out.canonical_result_id, out.validate_states) == (9, ((1, VALID),))


def test_new_result_differing_from_canonical_is_invalid() -> None:
    out = check_against_canonical(ValidationCandidate(9, b"a"), cands(b"b"), compare=bitwise_equal)
    assert out.validate_states == ((1, INVALID),)


def test_case_a_skips_the_canonical_result_itself() -> None:
    canonical = ValidationCandidate(1, b"a", VALID)
    out = check_against_canonical(canonical, [canonical, ValidationCandidate(2, b"a")], compare=bitwise_equal)
    assert out.validate_states == ((2, VALID),)


def test_consensus_plan_assimilates_and_stops_transitions() -> None:
    wu = ValidationWorkunit(5, min_quorum=2, target_nresults=2, max_success_results=3, transition_time=123)
    plan = plan_validation(wu, cands(b"a", b"a"), compare=bitwise_equal, now=NOW)
    assert (plan.canonical_result_id, plan.assimilate_ready, plan.unsent_didnt_need) == (1, True, True)
    assert plan.transition_time == TRANSITION_NEVER


def test_no_consensus_with_target_reached_asks_for_one_more_result() -> None:
    wu = ValidationWorkunit(
        5, min_quorum=2, target_nresults=2, max_success_results=3, transition_time=TRANSITION_NEVER
    )
    plan = plan_validation(wu, cands(b"a", b"b"), compare=bitwise_equal, now=NOW)
    assert (plan.target_nresults, plan.transition_time) == (3, int(NOW))


def test_no_consensus_with_too_many_successes_errors_the_workunit() -> None:
    wu = ValidationWorkunit(5, min_quorum=3, target_nresults=3, max_success_results=2)
    plan = plan_validation(wu, cands(b"a", b"b", b"c"), compare=bitwise_equal, now=NOW)
    assert plan.error_mask_set == ErrorMask.TOO_MANY_SUCCESS_RESULTS


def test_no_consensus_below_target_changes_nothing_on_the_workunit() -> None:
    wu = ValidationWorkunit(5, min_quorum=2, target_nresults=3, max_success_results=3, transition_time=1)
    plan = plan_validation(wu, cands(b"a", b"b"), compare=bitwise_equal, now=NOW)
    assert (plan.error_mask_set, plan.target_nresults, plan.transition_time) == (ErrorMask.NONE, None, None)


def test_validate_error_transitions_the_workunit_now() -> None:
    wu = ValidationWorkunit(5, min_quorum=1, canonical_result_id=9, transition_time=TRANSITION_NEVER)
    plan = plan_validation(
        wu,
        cands(b"unreadable"),
        compare=bitwise_equal,
        now=NOW,
        init=readable,
        canonical=ValidationCandidate(9, b"a"),
    )
    assert plan.outcome.validate_error_result_ids == (1,)
    assert plan.transition_time == int(NOW)


def test_case_a_without_canonical_payload_is_refused() -> None:
    wu = ValidationWorkunit(5, canonical_result_id=9)
    with pytest.raises(ValueError, match="canonical"):
        plan_validation(wu, cands(b"a"), compare=bitwise_equal, now=NOW)


def test_transient_error_retries_within_six_hours() -> None:
    assert transient_retry_time(TRANSITION_NEVER, NOW) == int(NOW) + 6 * 3600


def test_transient_error_keeps_an_earlier_transition_time() -> None:
    assert transient_retry_time(int(NOW) + 60, NOW) == int(NOW) + 60


def test_bitwise_equal_requires_identical_bytes() -> None:
    assert (bitwise_equal(b"1.0\n", b"1.0\n"), bitwise_equal(b"1.0\n", b"1.0")) == (True, False)


def test_numbers_within_relative_tolerance_match() -> None:
    assert tolerant_numeric_equal(b"e 1.0 2e3", b"e  1.0000001\n2000", rel_tol=1e-6, abs_tol=0.0) is True


def test_numbers_outside_tolerance_differ() -> None:
    assert tolerant_numeric_equal(b"1.0", b"1.001", rel_tol=1e-6, abs_tol=0.0) is False


def test_absolute_tolerance_covers_values_near_zero() -> None:
    assert tolerant_numeric_equal(b"0.0", b"-1e-12", rel_tol=1e-9, abs_tol=1e-9) is True


def test_non_numeric_tokens_must_match_exactly() -> None:
    assert tolerant_numeric_equal(b"energy 1", b"Energy 1", rel_tol=0.1, abs_tol=0.1) is False


def test_number_never_matches_a_word() -> None:
    assert tolerant_numeric_equal(b"1", b"one", rel_tol=0.1, abs_tol=0.1) is False


def test_different_token_counts_differ() -> None:
    assert tolerant_numeric_equal(b"1 2", b"1", rel_tol=0.1, abs_tol=0.1) is False


def test_nan_matches_only_nan() -> None:
    assert tolerant_numeric_equal(b"nan", b"NaN", rel_tol=0.0, abs_tol=0.0) is True
    assert tolerant_numeric_equal(b"nan", b"1", rel_tol=0.0, abs_tol=1e9) is False


def test_underscored_digits_are_not_numbers() -> None:
    assert tolerant_numeric_equal(b"1_000", b"1000", rel_tol=0.0, abs_tol=0.0) is False


@settings(max_examples=300, deadline=None)
@given(payloads=st.lists(st.sampled_from([b"a", b"b", b"c"]), max_size=7), min_quorum=st.integers(1, 4))
def test_canonical_belongs_to_an_agreeing_set_of_at_least_min_quorum(
    payloads: list[bytes], min_quorum: int
) -> None:
    results = cands(*payloads)
    out = check_set(results, min_quorum=min_quorum, compare=bitwise_equal)
    states = dict(out.validate_states)
    if out.canonical_result_id is None:
        assert max(Counter(payloads).values(), default=0) < min_quorum
        return
    canonical = results[out.canonical_result_id - 1].payload
    valid = [r for r in results if states[r.id] == VALID]
    assert out.canonical_result_id in {r.id for r in valid}
    assert len(valid) >= min_quorum
    assert all(r.payload == canonical for r in valid)
    assert all(r.payload != canonical for r in results if states[r.id] == INVALID)


_TOKENS = st.sampled_from([b"1", b"1.0000001", b"-2e3", b"nan", b"inf", b"x", b"0"])


@given(a=st.lists(_TOKENS, max_size=4), b=st.lists(_TOKENS, max_size=4))
def test_tolerant_comparison_is_symmetric(a: list[bytes], b: list[bytes]) -> None:
    x, y = b" ".join(a), b" ".join(b)
    assert tolerant_numeric_equal(x, y, rel_tol=1e-6, abs_tol=1e-9) is tolerant_numeric_equal(
        y, x, rel_tol=1e-6, abs_tol=1e-9
    )
