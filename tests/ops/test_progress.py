"""Progress lines of long commands: throttled, with rate and time left, and a summary."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from apps.core.progress import Progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_at_most_every_interval_with_rate_and_time_left():
    clock, lines = FakeClock(), []
    progress = Progress("creating workunits", total=3000, write=lines.append, every=2.0, clock=clock)
    clock.now = 1.0
    progress.advance(500)
    assert lines == []
    clock.now = 2.0
    progress.advance(500)
    assert lines == ["creating workunits: 1,000/3,000 (33 %, 500/s, 4 s left)"]


def test_the_summary_says_how_many_in_how_long():
    clock, lines = FakeClock(), []
    progress = Progress("data", write=lines.append, unit="bytes", clock=clock)
    progress.advance(3 * 2**20)
    clock.now = 1.5
    progress.finish()
    assert lines == ["data: 3.0 MB in 1.5 s"]


@pytest.mark.django_db
def test_create_work_from_stdin_reports_its_progress(project, cpu_app, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("--wu_name a1\n--wu_name a2\n--wu_name a3\n"))
    err = io.StringIO()
    call_command(
        "create_work", "--project", "ops", "--appname", "cpuapp", "--stdin", stdout=io.StringIO(), stderr=err
    )
    assert re.fullmatch(r"creating workunits: 3 in \d+\.\d s\n", err.getvalue())
