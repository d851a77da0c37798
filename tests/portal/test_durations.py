"""The ``duration`` filter: seconds in the unit a reader takes in at a glance (no database)."""

from __future__ import annotations

import pytest

from apps.portal.templatetags.durations import duration_text


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (1.3, "1.3 s"),
        (33.61, "33.6 s"),
        (59.96, "1.0 min"),
        (250, "4.2 min"),
        (33_624, "9.34 h"),
        (121_000, "1.40 days"),
    ],
)
def test_duration_picks_the_unit(seconds, shown):
    assert duration_text(seconds) == shown


@pytest.mark.parametrize("value", [None, "", "abc", float("nan"), float("inf")])
def test_duration_of_no_number_is_empty(value):
    assert duration_text(value) == ""
