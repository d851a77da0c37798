"""Pure tests of the balanced working-set pick and the holder-aware fallback (no database)."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from apps.locality.domain.choice import (
    FALLBACK,
    choose_balanced_file_for_new_host,
    fallback_file_for_host,
    least_held_files,
)
from apps.locality.domain.savings import (
    Delivery,
    FileDeliveries,
    transfer_savings,
    transfer_savings_per_file,
)


def test_least_held_files_are_those_with_the_fewest_holders() -> None:
    assert least_held_files(["a", "b", "c"], {"a": 2, "b": 1}) == {"c"}
    assert least_held_files(["a", "b"], {"a": 1, "b": 1}) == {"a", "b"}
    assert least_held_files([], {}) == set()


def test_successive_new_hosts_go_round_the_working_set() -> None:
    rng = random.Random(3)
    holders: Counter[str] = Counter()
    files = [f"f{i}" for i in range(5)]
    for _ in range(10):
        pick = choose_balanced_file_for_new_host(files, holders, rng, target_hosts=2)
        assert isinstance(pick, str)
        holders[pick] += 1
    assert set(holders.values()) == {2}  # every file reached M hosts, none more


def test_a_saturated_working_set_falls_back() -> None:
    pick = choose_balanced_file_for_new_host(["a", "b"], {"a": 2, "b": 3}, random.Random(1), target_hosts=2)
    assert pick is FALLBACK
    assert choose_balanced_file_for_new_host([], {}, random.Random(1), target_hosts=2) is FALLBACK


def test_fallback_prefers_files_below_target() -> None:
    unsent = {"a": 5, "b": 5, "c": 1, "d": 0}
    assert fallback_file_for_host(7, unsent, holders={"a": 2, "b": 2}, target_hosts=2) == "c"
    assert fallback_file_for_host(7, unsent, {"a", "b", "c"}, holders={}, target_hosts=2) is None


def test_when_every_file_has_m_holders_the_most_work_per_holder_wins() -> None:
    unsent = {"a": 4, "b": 9, "c": 11}
    holders = {"a": 2, "b": 2, "c": 3}
    assert fallback_file_for_host(7, unsent, holders=holders, target_hosts=2) == "b"  # 9/3 > 11/4 > 4/3
    assert fallback_file_for_host(7, unsent, {"b"}, holders=holders, target_hosts=2) == "c"


def test_fallback_is_deterministic_per_host_and_spreads_hosts() -> None:
    unsent = {f"f{i}": 3 for i in range(20)}
    picks = [fallback_file_for_host(h, unsent, holders={}, target_hosts=2) for h in range(40)]
    assert picks[11] == fallback_file_for_host(11, dict(reversed(unsent.items())), holders={}, target_hosts=2)
    assert len(set(picks)) >= 10


@given(
    st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from(["f1", "f2", "f3"])),
        max_size=40,
    )
)
def test_savings_from_per_file_counts_equal_the_deliveries(pairs: list[tuple[int, str]]) -> None:
    sizes = {"f1": 100, "f2": 50, "f3": 0}
    deliveries = [Delivery(host, name, sizes[name]) for host, name in pairs]
    rows = [
        FileDeliveries(
            file_name=name,
            nbytes=nbytes,
            deliveries=sum(1 for _, n in pairs if n == name),
            hosts=len({h for h, n in pairs if n == name}),
        )
        for name, nbytes in sizes.items()
    ]
    hosts = len({h for h, _ in pairs})
    assert transfer_savings_per_file(rows, hosts=hosts) == transfer_savings(deliveries)
