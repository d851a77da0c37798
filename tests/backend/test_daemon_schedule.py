"""Beat's ticks during a backlog: a tick still queued when the next one is due is dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from unittest.mock import MagicMock

from boincproj.celery import DEFAULT_SCHEDULE
from boincproj.celery import app as celery_app

BASE_DIR = Path(__file__).resolve().parents[2]
# What a worker registers at start: the apps loaded, then each app's tasks module found by
# autodiscovery, in a process of its own so no test's imports register a task for it.
REGISTERED_TASKS = (
    "import json; from boincproj.celery import app; app.loader.import_default_modules(); "
    "print(json.dumps(sorted(app.tasks)))"
)


def test_every_task_of_the_beat_schedule_is_registered_by_app_loading(tmp_path):
    env = {"PATH": os.environ["PATH"], "COBBLESTONE_VAR_DIR": str(tmp_path), "DEBUG": "true"}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", REGISTERED_TASKS],
        cwd=BASE_DIR, env={**env, "DATABASE_URL": "sqlite://:memory:"},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    registered = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert {entry.task for entry in DEFAULT_SCHEDULE} - registered == set()


def test_every_periodic_daemon_message_expires_after_its_interval_or_a_minute():
    celery_app.loader.import_default_modules()
    for entry in DEFAULT_SCHEDULE:
        options = celery_app.tasks[entry.task]._get_exec_options()
        assert options["expires"] == max(entry.every_seconds, 60), entry.task


def test_a_transitioner_tick_sent_by_beat_carries_its_expiry(monkeypatch):
    celery_app.loader.import_default_modules()
    sent: list[dict] = []
    monkeypatch.setattr(
        celery_app.amqp,
        "send_task_message",
        lambda producer, name, message, **kw: sent.append(message.headers),
    )
    before = datetime.now(UTC)
    celery_app.tasks["work.transition"].apply_async(producer=MagicMock())
    expires = datetime.fromisoformat(sent[0]["expires"])
    assert before + timedelta(seconds=55) < expires < before + timedelta(seconds=65)
