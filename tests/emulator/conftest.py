"""Fixtures for the emulator's database and live-mode tests."""

from __future__ import annotations

import pytest

from apps.benchmarks.project import BenchProject, bench_project_create


@pytest.fixture
def bench_project(settings, live_server, tmp_path) -> BenchProject:
    """A benchmark project served by pytest-django's live server, with 20 accounts.

    The project's URLs (upload URLs in replies) must point at the live server.
    """
    settings.COBBLESTONE_BASE_URL = live_server.url
    settings.COBBLESTONE_DATA_DIR = str(tmp_path / "data")
    return bench_project_create(slug="live", njobs=1500, naccounts=20)
