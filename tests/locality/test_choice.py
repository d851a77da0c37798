from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.locality.domain.choice import (
    FALLBACK,
    LocalityCandidate,
    NoResultsAction,
    choose_file_for_new_host,
    choose_locality_file,
    decide_file_without_results,
    deterministic_fallback_file,
    next_results_for_file,
    order_host_files,
    working_set_size,
)

# --- ordering of the host's files --------------------------------------------------------


def test_sorted_order_is_increasing_file_name_without_duplicates() -> None:
    assert order_host_files(["c", "a", "b", "a"], sorted_order=True) == ["a", "b", "c"]


def test_random_order_depends_only_on_the_seeded_rng() -> None:
    names = [f"f{i:02d}" for i in range(20)]
    first = order_host_files(names, sorted_order=False, rng=random.Random(7))
    again = order_host_files(reversed(names), sorted_order=False, rng=random.Random(7))
    other = order_host_files(names, sorted_order=False, rng=random.Random(8))
    assert first == again
    assert sorted(first) == names
    assert first != other


def test_random_order_needs_an_rng() -> None:
    with pytest.raises(ValueError, match="rng"):
        order_host_files(["a"], sorted_order=False)


# --- results for a file a host holds -------------------------------------------------------


def _c(result_id: int, workunit_id: int, file_name: str = "f") -> LocalityCandidate:
    return LocalityCandidate(result_id=result_id, workunit_id=workunit_id, file_name=file_name)


def test_results_go_in_increasing_id_order_above_the_last_sent() -> None:
    candidates = [_c(9, 3), _c(4, 1), _c(7, 2), _c(2, 1), _c(8, 9, file_name="other")]
    ids = next_results_for_file(
        candidates, file_name="f", last_sent_result_id=3, one_result_per_user_per_wu=False, limit=10
    )
    assert ids == [4, 7, 9]


def test_first_request_for_a_file_starts_at_the_lowest_id() -> None:
    ids = next_results_for_file(
        [_c(5, 1), _c(3, 2)],
        file_name="f",
        last_sent_result_id=None,
        one_result_per_user_per_wu=False,
        limit=1,
    )
    assert ids == [3]


def test_one_result_per_user_per_wu_skips_the_users_workunits_and_duplicates() -> None:
    candidates = [_c(10, 1), _c(11, 1), _c(12, 2), _c(13, 3), _c(14, 3)]
    ids = next_results_for_file(
        candidates,
        file_name="f",
        last_sent_result_id=None,
        one_result_per_user_per_wu=True,
        user_workunit_ids={2},
        limit=10,
    )
    assert ids == [10, 13]


def test_user_workunits_are_ignored_without_the_rule() -> None:
    ids = next_results_for_file(
        [_c(10, 1), _c(11, 1)],
        file_name="f",
        last_sent_result_id=None,
        one_result_per_user_per_wu=False,
        user_workunit_ids={1},
        limit=10,
    )
    assert ids == [10, 11]


def test_limit_bounds_the_answer() -> None:
    candidates = [_c(i, i) for i in range(1, 50)]

    def pick(limit: int) -> list[int]:
        return next_results_for_file(
            candidates, file_name="f", last_sent_result_id=None, one_result_per_user_per_wu=False, limit=limit
        )

    assert pick(3) == [1, 2, 3]
    assert pick(0) == []


@given(
    candidates=st.lists(
        st.builds(
            LocalityCandidate,
            result_id=st.integers(1, 200),
            workunit_id=st.integers(1, 30),
            file_name=st.sampled_from(["f", "g"]),
        ),
        max_size=60,
    ),
    last_sent=st.one_of(st.none(), st.integers(0, 200)),
    one_per_wu=st.booleans(),
    user_wus=st.frozensets(st.integers(1, 30), max_size=10),
    limit=st.integers(0, 20),
)
def test_ids_are_strictly_increasing_and_above_the_last_sent(
    candidates: list[LocalityCandidate],
    last_sent: int | None,
    one_per_wu: bool,
    user_wus: frozenset[int],
    limit: int,
) -> None:
    ids = next_results_for_file(
        candidates,
        file_name="f",
        last_sent_result_id=last_sent,
        one_result_per_user_per_wu=one_per_wu,
        user_workunit_ids=user_wus,
        limit=limit,
    )
    assert len(ids) <= limit
    assert all(a < b for a, b in itertools.pairwise(ids))
    if last_sent is not None:
        assert all(i > last_sent for i in ids)
    by_id = {c.result_id: c for c in candidates if c.file_name == "f"}
    assert all(i in by_id for i in ids)
    if one_per_wu:
        wus = [by_id[i].workunit_id for i in ids]
        assert len(wus) == len(set(wus))
        assert not set(wus) & user_wus


# --- a file with no sendable results ------------------------------------------------------


def _decide(**overrides: object) -> NoResultsAction:
    inputs: dict[str, object] = {
        "has_unsent_results": False,
        "no_work_available": False,
        "more_to_come": False,
        "wait_period": 0.0,
        "already_waited": False,
    }
    inputs.update(overrides)
    return decide_file_without_results(**inputs)  # type: ignore[arg-type]


def test_unsent_results_excluded_for_the_user_keep_the_file() -> None:
    assert _decide(has_unsent_results=True, wait_period=10.0) is NoResultsAction.KEEP
    assert _decide(has_unsent_results=True, no_work_available=True) is NoResultsAction.KEEP


def test_on_demand_generation_requests_work_then_waits_once() -> None:
    first = _decide(wait_period=10.0)
    assert first is NoResultsAction.REQUEST_WORK
    assert (first.signals_need_work, first.retries_after_wait, first.deletes_from_host) == (True, True, False)


def test_nothing_after_the_wait_is_no_results_available() -> None:
    # After sleeping and one more query, the file is one with no results
    # available: deleted from the host and marked files_no_work (kept, but marked, while
    # unfinished workunits may still spawn results, as without a wait).
    second = _decide(wait_period=10.0, already_waited=True)
    assert second is NoResultsAction.DELETE
    assert (second.signals_need_work, second.retries_after_wait, second.marks_no_work) == (False, False, True)
    assert _decide(wait_period=10.0, already_waited=True, more_to_come=True) is NoResultsAction.NO_WORK


def test_no_work_available_marker_skips_the_request_and_deletes() -> None:
    action = _decide(wait_period=10.0, no_work_available=True)
    assert action is NoResultsAction.DELETE
    assert (action.deletes_from_host, action.marks_no_work, action.signals_need_work) == (True, True, False)


def test_without_on_demand_generation_an_exhausted_file_is_deleted() -> None:
    assert _decide() is NoResultsAction.DELETE


def test_more_to_come_marks_no_work_but_keeps_the_file() -> None:
    action = _decide(more_to_come=True)
    assert action is NoResultsAction.NO_WORK
    assert (action.marks_no_work, action.deletes_from_host) == (True, False)
    assert _decide(more_to_come=True, no_work_available=True, wait_period=5.0) is NoResultsAction.NO_WORK


# --- hosts with no files ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hosts", "target", "size"),
    [(1000, 3, 333), (10, 2, 5), (2, 3, 1), (0, 1, 1)],
)
def test_working_set_size_is_hosts_over_target_at_least_one(hosts: int, target: int, size: int) -> None:
    assert working_set_size(hosts, target) == size


def test_working_set_size_rejects_a_zero_target() -> None:
    with pytest.raises(ValueError, match="target_nresults"):
        working_set_size(10, 0)


def test_new_host_gets_a_working_set_file_uniformly() -> None:
    rng = random.Random(1)
    picks = Counter(choose_file_for_new_host(["a", "b", "c"], rng) for _ in range(3000))
    assert set(picks) == {"a", "b", "c"}
    assert all(800 < n < 1200 for n in picks.values())


def test_excluded_pick_falls_back() -> None:
    assert choose_file_for_new_host(["a"], random.Random(0), {"a"}) is FALLBACK
    assert choose_file_for_new_host([], random.Random(0)) is FALLBACK


def test_more_attempts_find_a_file_not_excluded() -> None:
    files = ["a", "b"]
    one_try = [choose_file_for_new_host(files, random.Random(s), {"a"}) for s in range(50)]
    many = [choose_file_for_new_host(files, random.Random(s), {"a"}, attempts=20) for s in range(50)]
    assert FALLBACK in one_try
    assert set(many) == {"b"}


def test_fallback_is_deterministic_and_ignores_input_order() -> None:
    files = [f"f{i}" for i in range(10)]
    first = deterministic_fallback_file(42, files)
    assert first in files
    assert deterministic_fallback_file(42, reversed(files)) == first
    assert deterministic_fallback_file(42, files) == first


def test_fallback_spreads_hosts_across_files() -> None:
    files = [f"f{i}" for i in range(10)]
    picks = Counter(deterministic_fallback_file(host_id, files) for host_id in range(1, 2001))
    assert set(picks) == set(files)
    assert max(picks.values()) < 2 * min(picks.values())


def test_fallback_skips_files_excluded_for_the_user() -> None:
    files = ["a", "b", "c"]
    for host_id in range(50):
        assert deterministic_fallback_file(host_id, files, {"a", "b"}) == "c"
    assert deterministic_fallback_file(1, files, set(files)) is None
    assert deterministic_fallback_file(1, []) is None


def test_fallback_moves_only_hosts_of_a_file_that_ran_out() -> None:
    files = [f"f{i}" for i in range(8)]
    before = {h: deterministic_fallback_file(h, files) for h in range(500)}
    after = {h: deterministic_fallback_file(h, [f for f in files if f != "f3"]) for h in range(500)}
    moved = {h for h in before if before[h] != after[h]}
    assert moved == {h for h in before if before[h] == "f3"}


def test_choose_locality_file_uses_the_fallback_when_the_pick_is_excluded() -> None:
    chosen = choose_locality_file(
        host_id=7,
        working_set=["a"],
        files_with_work=["a", "b", "c"],
        excluded_for_user={"a"},
        rng=random.Random(0),
    )
    assert chosen == deterministic_fallback_file(7, ["b", "c"])
    assert (
        choose_locality_file(host_id=7, working_set=["a"], files_with_work=["a"], rng=random.Random(0)) == "a"
    )
