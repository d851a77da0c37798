"""The product's stage marks: nothing unless a meter is installed, the meter's block when one is."""

from __future__ import annotations

from contextlib import contextmanager

from apps.core import stages


def test_without_a_meter_a_stage_does_nothing():
    with stages.stage("upload") as entered:
        assert entered is None


def test_an_installed_meter_wraps_each_stage_by_name():
    seen = []

    @contextmanager
    def meter(name):
        seen.append(f"enter {name}")
        yield
        seen.append(f"exit {name}")

    stages.stage_meter_install(meter)
    try:
        with stages.stage("dispatch"):
            seen.append("body")
    finally:
        stages.stage_meter_install(None)
    assert seen == ["enter dispatch", "body", "exit dispatch"]
