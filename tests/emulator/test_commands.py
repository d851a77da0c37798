"""The emulate command (the scenario tables and chart admins read)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command


def _emulate(*args: str) -> str:
    out = StringIO()
    call_command("emulate", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_all_policies_side_by_side_with_the_five_figures() -> None:
    lines = _emulate("example1_gpu_sharing", "--policy", "all", "--days", "2").splitlines()
    header = lines[1]
    for column in ("idle", "wasted", "share viol.", "monotony", "RPCs/job"):
        assert column in header
    assert [line.split()[0] for line in lines[3:6]] == ["v4", "v6-gpu", "rec"]


def test_one_policy_prints_its_table() -> None:
    output = _emulate("example1_gpu_sharing", "--policy", "rec", "--days", "1")
    assert "policy rec, 1 simulated days" in output


def test_chart_is_written_as_svg(tmp_path: Path) -> None:
    chart = tmp_path / "out.svg"
    _emulate("example1_gpu_sharing", "--days", "1", "--chart", str(chart))
    assert ET.parse(chart).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def test_unknown_scenario_is_an_error() -> None:
    with pytest.raises(CommandError, match="cannot load scenario"):
        _emulate("no_such_scenario.yaml")
