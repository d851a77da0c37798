from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apps.emulator.domain.backoff import (
    MAX_BACKOFF_INTERVAL,
    MIN_BACKOFF_INTERVAL,
    Backoff,
    backoff_after_no_work,
    backoff_cleared,
    transfer_retry_delay,
)
from apps.emulator.domain.model import DAY


def test_first_backoff_uses_the_minimum_interval() -> None:
    backoff = backoff_after_no_work(Backoff(), now=1000.0, u=0.5)
    assert backoff == Backoff(interval=MIN_BACKOFF_INTERVAL, until=1000.0 + MIN_BACKOFF_INTERVAL)


def test_backoff_interval_doubles() -> None:
    backoff = backoff_after_no_work(Backoff(interval=1200.0, until=0.0), now=0.0, u=0.5)
    assert backoff.interval == 2400.0


def test_backoff_interval_stops_at_one_day() -> None:
    backoff = backoff_after_no_work(Backoff(interval=60000.0), now=0.0, u=0.5)
    assert backoff.interval == DAY


def test_backoff_delay_is_randomised_around_the_interval() -> None:
    backoff = backoff_after_no_work(Backoff(interval=1200.0), now=0.0, u=0.0)
    assert backoff.until == 0.5 * 2400.0


def test_backed_off_until_the_end_time() -> None:
    backoff = Backoff(interval=600.0, until=100.0)
    assert (backoff.is_backed_off(99.0), backoff.is_backed_off(100.0)) == (True, False)


def test_at_max_only_at_one_day() -> None:
    assert (Backoff(interval=DAY / 2).at_max(), Backoff(interval=DAY).at_max()) == (False, True)


def test_cleared_backoff_is_not_backed_off() -> None:
    assert backoff_cleared().is_backed_off(0.0) is False


@given(
    failures=st.integers(min_value=1, max_value=40),
    draws=st.lists(st.floats(min_value=0.0, max_value=0.999999), min_size=40, max_size=40),
)
def test_backoff_never_exceeds_one_day(failures: int, draws: list[float]) -> None:
    backoff = Backoff()
    now = 0.0
    for u in draws[:failures]:
        backoff = backoff_after_no_work(backoff, now=now, u=u)
        assert backoff.interval <= MAX_BACKOFF_INTERVAL
        assert backoff.until <= now + MAX_BACKOFF_INTERVAL
        now = backoff.until


def test_a_failed_transfer_waits_from_one_to_two_minutes_then_twice_as_long_each_time() -> None:
    assert (transfer_retry_delay(1, 0.0), transfer_retry_delay(1, 1.0)) == (120.0, 240.0)
    assert (transfer_retry_delay(2, 0.0), transfer_retry_delay(2, 1.0)) == (240.0, 480.0)


def test_a_failed_transfer_waits_at_most_six_hours() -> None:
    assert transfer_retry_delay(30, 1.0) == 6 * 3600.0
