"""Beat's ticks during a backlog: a tick still queued when the next one is due is dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest.mock import MagicMock

from boincproj.celery import DEFAULT_SCHEDULE
from boincproj.celery import app as celery_app


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
