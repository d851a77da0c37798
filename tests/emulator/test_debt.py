from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.core.domain.resources import ProcType
from apps.emulator.domain.debt import (
    adjust_debts,
    normalize_max_zero,
    overall_debt,
    update_long_term_debts,
    update_short_term_debts,
    update_v4_debts,
)

NAMES = ["A", "B", "C", "D"]
debt_values = st.floats(min_value=-1e7, max_value=1e7, allow_nan=False)


@st.composite
def debt_steps(draw: st.DrawFn) -> dict:
    n = draw(st.integers(min_value=1, max_value=4))
    names = NAMES[:n]
    dt = draw(st.floats(min_value=1.0, max_value=86400.0))
    ninstances = draw(st.integers(min_value=1, max_value=8))
    return {
        "debts": {p: draw(debt_values) for p in names},
        "shares": {p: draw(st.floats(min_value=0.0, max_value=1000.0)) for p in names},
        "used": {p: draw(st.floats(min_value=0.0, max_value=dt * ninstances)) for p in names},
        "eligible": set(draw(st.lists(st.sampled_from(names), unique=True))),
        "dt": dt,
        "ninstances": ninstances,
    }


def test_eligible_project_gains_owed_minus_used() -> None:
    debts = adjust_debts(
        {"A": 0.0, "B": 0.0},
        shares={"A": 100, "B": 100},
        used={"A": 60.0, "B": 0.0},
        eligible={"A", "B"},
        dt=60.0,
        ninstances=1,
    )
    assert debts == {"A": -30.0, "B": 30.0}


def test_ineligible_project_keeps_its_debt() -> None:
    debts = adjust_debts(
        {"A": 5.0, "B": 0.0},
        shares={"A": 100, "B": 100},
        used={"A": 0.0, "B": 60.0},
        eligible={"B"},
        dt=60.0,
        ninstances=1,
    )
    assert debts["A"] == 5.0


def test_max_zero_offset_starts_new_project_level_with_the_most_owed() -> None:
    assert normalize_max_zero({"A": -50.0, "B": 20.0, "C": 0.0}) == {"A": -70.0, "B": 0.0, "C": -20.0}


def test_long_term_debt_step_ends_with_max_zero() -> None:
    debts = update_long_term_debts(
        {"A": 0.0, "B": 0.0},
        shares={"A": 100, "B": 100},
        used={"A": 60.0},
        eligible={"A", "B"},
        dt=60.0,
        ninstances=1,
    )
    assert debts == {"A": -60.0, "B": 0.0}


def test_short_term_debt_resets_projects_without_runnable_jobs() -> None:
    debts = update_short_term_debts(
        {"A": 500.0, "B": -500.0},
        shares={"A": 100, "B": 100},
        used={"B": 60.0},
        runnable={"B"},
        dt=60.0,
        ninstances=1,
        max_debt=86400.0,
    )
    assert debts["A"] == 0.0


def test_short_term_debt_of_a_project_left_alone_with_work_returns_to_zero() -> None:
    # Client 6.6 normalized the short-term debts of the projects with work to mean zero.
    debts = update_short_term_debts(
        {"A": -86400.0, "B": 86400.0},
        shares={"A": 100, "B": 100},
        used={"B": 60.0},
        runnable={"B"},
        dt=60.0,
        ninstances=1,
        max_debt=86400.0,
    )
    assert debts == {"A": 0.0, "B": 0.0}


def test_short_term_debt_is_clamped() -> None:
    debts = update_short_term_debts(
        {"A": 86000.0, "B": -86000.0},
        shares={"A": 100, "B": 100},
        used={"B": 3600.0},
        runnable={"A", "B"},
        dt=3600.0,
        ninstances=1,
        max_debt=86400.0,
    )
    assert debts == {"A": 86400.0, "B": -86400.0}


def test_v4_debt_reset_for_project_without_runnable_results() -> None:
    debts = update_v4_debts(
        {"A": 100.0, "B": 100.0}, shares={"A": 1, "B": 1}, work_done={"B": 60.0}, runnable={"B"}
    )
    assert debts == {"A": 0.0, "B": 100.0}


def test_v4_debt_follows_relative_share_of_work_done() -> None:
    # The 4.x client design's example: 75%/25% shares, 25 and 15 minutes of CPU.
    debts = update_v4_debts(
        {"A": 0.0, "B": 0.0}, shares={"A": 75, "B": 25}, work_done={"A": 25.0, "B": 15.0}, runnable={"A", "B"}
    )
    assert debts == {"A": 5.0, "B": -5.0}


def test_overall_debt_weights_resources_by_speed() -> None:
    debts = {ProcType.CPU: {"A": -10.0}, ProcType.NVIDIA: {"A": 4.0}}
    speeds = {ProcType.CPU: 1.0, ProcType.NVIDIA: 2.0}
    assert overall_debt("A", debts, speeds) == -2.0


@given(debt_steps())
def test_zero_sum_offset_keeps_sum_of_eligible_debts(step: dict) -> None:
    before = sum(d for p, d in step["debts"].items() if p in step["eligible"])
    after_debts = adjust_debts(**step)
    after = sum(d for p, d in after_debts.items() if p in step["eligible"])
    assert after == pytest.approx(before, abs=1e-6 * (1 + abs(before) + step["dt"] * step["ninstances"]))


@given(debt_steps())
def test_max_debt_is_zero_after_max_zero_offset(step: dict) -> None:
    assert max(update_long_term_debts(**step).values()) == 0.0


def _short_term(step: dict, max_debt: float) -> dict[str, float]:
    return update_short_term_debts(
        step["debts"],
        shares=step["shares"],
        used=step["used"],
        runnable=step["eligible"],
        dt=step["dt"],
        ninstances=step["ninstances"],
        max_debt=max_debt,
    )


@given(debt_steps())
def test_short_term_debts_stay_within_bounds(step: dict) -> None:
    debts = _short_term(step, 86400.0)
    assert all(abs(d) <= 86400.0 for d in debts.values())


@given(debt_steps())
def test_short_term_debts_of_projects_with_work_have_mean_zero(step: dict) -> None:
    debts = _short_term(step, 1e12)
    members = [d for p, d in debts.items() if p in step["eligible"]]
    scale = 1 + sum(abs(d) for d in step["debts"].values()) + step["dt"] * step["ninstances"]
    assert sum(members) == pytest.approx(0.0, abs=1e-6 * scale)
