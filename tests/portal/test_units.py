"""Figures in readable units: GFLOPS, percentages, BOINC's version numbers."""

import pytest

from apps.portal.templatetags.units import boinc_version, gflop, gflops, percent


@pytest.mark.parametrize(
    ("flops", "text"),
    [(29e12, "29,000 GFLOPS"), (3e9, "3.0 GFLOPS"), (4.3e9, "4.3 GFLOPS"), (0, "0.0 GFLOPS"), ("x", "")],
)
def test_gflops(flops, text):
    assert gflops(flops) == text


def test_a_jobs_size_is_in_gflop():
    assert gflop(3.6e12) == "3,600 GFLOP"


@pytest.mark.parametrize(
    ("fraction", "text"), [(0.0125, "1.2 %"), (0.25, "25.0 %"), (1, "100.0 %"), (None, "")]
)
def test_percent(fraction, text):
    assert percent(fraction) == text


@pytest.mark.parametrize(("num", "text"), [(712, "7.12"), (100, "1.00"), (5, "0.05"), ("", "")])
def test_boinc_version(num, text):
    assert boinc_version(num) == text
