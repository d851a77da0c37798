from __future__ import annotations

from apps.locality.domain.working_set import update_working_set


def test_no_work_files_are_dropped_and_the_set_is_topped_up_in_name_order() -> None:
    update = update_working_set(
        current=["b", "c"],
        unsent_counts={"a": 0, "b": 3, "c": 0, "d": 5, "e": 1, "f": 2},
        no_work={"c"},
        target_size=3,
    )
    assert update.working_set == ("b", "d", "e")
    assert update.removed == ("c",)
    assert update.added == ("d", "e")
    assert update.cleared_no_work == ()


def test_file_whose_work_reappeared_is_readded_first_and_its_marker_cleared() -> None:
    update = update_working_set(
        current=["b"],
        unsent_counts={"a": 4, "b": 1, "z": 2},
        no_work={"z"},
        target_size=2,
    )
    assert update.working_set == ("b", "z")
    assert update.cleared_no_work == ("z",)
    assert update.added == ("z",)


def test_stale_marker_on_a_current_file_keeps_it() -> None:
    update = update_working_set(current=["a"], unsent_counts={"a": 2}, no_work={"a"}, target_size=1)
    assert update.working_set == ("a",)
    assert update.removed == ()
    assert update.cleared_no_work == ("a",)


def test_files_the_project_no_longer_has_are_dropped() -> None:
    update = update_working_set(current=["gone", "a"], unsent_counts={"a": 1}, no_work=set(), target_size=5)
    assert update.working_set == ("a",)
    assert update.removed == ("gone",)


def test_the_set_is_cut_back_to_a_lower_target_least_held_files_first() -> None:
    # The working set keeps N/M files. Unheld files go first (no download lost, no half-sent
    # workunit stranded), then, among files held alike, the one with the least work left.
    update = update_working_set(
        current=["a", "b", "c", "d", "e"],
        unsent_counts={"a": 9, "b": 5, "c": 2, "d": 7, "e": 8, "f": 9},
        no_work=set(),
        target_size=2,
        holders={"b": 2, "c": 2, "d": 2},
    )
    assert update.working_set == ("b", "d")
    assert (update.added, update.removed) == ((), ("a", "c", "e"))


def test_cutting_back_counts_only_files_still_in_the_set() -> None:
    update = update_working_set(
        current=["a", "b", "c"], unsent_counts={"a": 1, "b": 3, "c": 0}, no_work={"c"}, target_size=1
    )
    assert update.working_set == ("b",)  # c leaves as a no-work file; of a and b, a has less work left
    assert update.removed == ("a", "c")


def test_files_without_unsent_results_are_not_added() -> None:
    update = update_working_set(current=[], unsent_counts={"a": 0, "b": 0}, no_work=set(), target_size=2)
    assert update.working_set == ()
