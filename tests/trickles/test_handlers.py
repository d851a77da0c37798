"""Running the handlers of stored trickle-ups (BOINC's trickle_handler daemon)."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command

from apps.core import clock
from apps.trickles.models import HandledState, MsgFromHost, TrickleHandler
from apps.trickles.services import LOST_AFTER, TrickleRetry, trickle_handle
from apps.trickles.tasks import MAX_RETRIES, trickle_handle_task, trickles_sweep_task
from tests.trickles import handlers
from tests.trickles.conftest import trickle

pytestmark = pytest.mark.django_db


@pytest.fixture
def message(volunteer) -> MsgFromHost:
    volunteer.rpc(trickle(volunteer.result.name, variety="progress"))
    return MsgFromHost.objects.get()


def _handler(message: MsgFromHost, path: str) -> TrickleHandler:
    return TrickleHandler.objects.create(app_id=message.result.app_id, variety="progress", handler=path)


def test_the_handler_of_the_app_and_variety_runs_and_the_message_is_handled(message):
    _handler(message, "tests.trickles.handlers.record")

    trickle_handle(message_id=message.id, now=clock.now())

    message.refresh_from_db()
    assert message.id in handlers.SEEN
    assert message.handled == HandledState.HANDLED
    assert message.handled_time is not None


def test_a_message_is_handled_once(message):
    _handler(message, "tests.trickles.handlers.record")
    handlers.SEEN.clear()

    trickle_handle(message_id=message.id, now=clock.now())
    trickle_handle(message_id=message.id, now=clock.now())

    assert [message.id] == handlers.SEEN


def test_a_variety_without_handler_stays_unhandled_with_the_reason(message):
    trickle_handle(message_id=message.id, now=clock.now())

    message.refresh_from_db()
    assert message.handled == HandledState.UNHANDLED
    assert message.error == "no handler for variety 'progress'"


def test_a_failing_handler_is_retried_and_its_error_kept(message):
    _handler(message, "tests.trickles.handlers.broken")

    with pytest.raises(TrickleRetry):
        trickle_handle(message_id=message.id, now=clock.now())

    message.refresh_from_db()
    assert (message.handled, message.attempts) == (HandledState.UNHANDLED, 1)
    assert "science is down" in message.error


def test_the_last_retry_marks_the_message_failed(message):
    _handler(message, "tests.trickles.handlers.broken")

    trickle_handle(message_id=message.id, now=clock.now(), final=True)

    message.refresh_from_db()
    assert message.handled == HandledState.FAILED


def test_a_refusing_handler_fails_the_message_at_once(message):
    _handler(message, "tests.trickles.handlers.refusing")

    trickle_handle(message_id=message.id, now=clock.now())

    message.refresh_from_db()
    assert (message.handled, message.error) == (HandledState.FAILED, "not for this handler")


def test_the_task_retries_a_failing_handler_then_gives_up(message, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _handler(message, "tests.trickles.handlers.broken")

    trickle_handle_task.apply(args=[message.id])

    message.refresh_from_db()
    assert message.attempts == MAX_RETRIES + 1
    assert message.handled == HandledState.FAILED


def test_handle_trickles_runs_the_handlers_once_over_the_unhandled_messages(message, volunteer):
    _handler(message, "tests.trickles.handlers.record")
    out = io.StringIO()

    call_command("handle_trickles", "--project=sched", stdout=out)

    message.refresh_from_db()
    assert message.handled == HandledState.HANDLED
    assert "1 handled" in out.getvalue()


def test_a_message_whose_task_was_lost_is_handled_by_the_sweep(message, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _handler(message, "tests.trickles.handlers.record")
    MsgFromHost.objects.filter(id=message.id).update(
        create_time=clock.now() - LOST_AFTER - timedelta(seconds=1)
    )

    assert trickles_sweep_task.apply().get() == 1

    message.refresh_from_db()
    assert message.handled == HandledState.HANDLED


def test_the_sweep_leaves_a_message_whose_task_may_still_be_queued(message, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _handler(message, "tests.trickles.handlers.record")

    assert trickles_sweep_task.apply().get() == 0

    message.refresh_from_db()
    assert message.handled == HandledState.UNHANDLED
