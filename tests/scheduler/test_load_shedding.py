"""A saturated scheduler answers "busy" with a request_delay at once, instead of queueing."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.test import RequestFactory

from apps.protocol import parse_reply, render_request
from apps.scheduler.admission import BUSY_MESSAGE, queued_in_front, scheduler_slot
from tests.scheduler.conftest import make_request

NOW = 1_700_000_000.0


@pytest.fixture
def shedding(settings):
    settings.COBBLESTONE_SCHED_SLOTS = 1
    settings.COBBLESTONE_SCHED_QUEUE_SECONDS = 0.2
    settings.COBBLESTONE_BUSY_DELAY = 100
    return settings


@contextmanager
def every_slot_taken() -> Iterator[None]:
    """Another RPC of this process holds the (only) slot until the block ends."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with scheduler_slot(RequestFactory().post("/x/cgi")) as admitted:
            assert admitted
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait(10)
    try:
        yield
    finally:
        done.set()
        thread.join()


def post_rpc(client, project, **headers):
    body = render_request(make_request("0" * 32))
    return client.post(
        f"/{project.slug}/cgi", data=body, content_type="application/x-www-form-urlencoded", headers=headers
    )


@pytest.mark.django_db
def test_a_saturated_scheduler_says_busy_and_when_to_come_back(client, project, shedding):
    with every_slot_taken():
        response = post_rpc(client, project)
    assert response.status_code == 200  # the client honours request_delay only in a 200
    reply = parse_reply(response.content)
    assert [m.text for m in reply.messages] == [BUSY_MESSAGE]
    assert 100 <= reply.request_delay <= 150
    assert reply.project_is_down is False
    assert int(response["Retry-After"]) == int(reply.request_delay)


@pytest.mark.django_db
def test_a_free_slot_serves_the_rpc(client, project, shedding):
    reply = parse_reply(post_rpc(client, project).content)
    assert BUSY_MESSAGE not in [m.text for m in reply.messages]
    assert "account key" in reply.messages[0].text  # the usual answer to an unknown key


@pytest.mark.django_db
def test_the_slot_is_free_again_after_a_failed_rpc(client, project, shedding):
    bad = client.post(f"/{project.slug}/cgi", data=b"<not xml", content_type="text/xml")
    assert "Bad scheduler request" in parse_reply(bad.content).messages[0].text
    reply = parse_reply(post_rpc(client, project).content)
    assert BUSY_MESSAGE not in [m.text for m in reply.messages]


@pytest.mark.django_db
def test_a_request_that_waited_too_long_in_front_is_turned_away_at_once(client, project, shedding):
    stamp = f"t={time.time() - 5:.3f}"  # nginx's form: five seconds ago
    reply = parse_reply(post_rpc(client, project, **{"X-Request-Start": stamp}).content)
    assert [m.text for m in reply.messages] == [BUSY_MESSAGE]


@pytest.mark.django_db
def test_no_slots_configured_means_no_shedding(client, project, shedding):
    shedding.COBBLESTONE_SCHED_SLOTS = 0
    reply = parse_reply(post_rpc(client, project, **{"X-Request-Start": "t=1"}).content)
    assert BUSY_MESSAGE not in [m.text for m in reply.messages]


@pytest.mark.django_db
def test_the_json_face_says_busy_with_503_and_retry_after(client, project, shedding):
    with every_slot_taken():
        response = client.post(
            f"/api/v1/projects/{project.slug}/scheduler/", data={"hostid": 0}, content_type="application/json"
        )
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["error"] == BUSY_MESSAGE
    assert int(response["Retry-After"]) == body["request_delay"]


@pytest.mark.parametrize(
    ("header", "waited"),
    [
        ("t=1699999998.5", 1.5),  # nginx: seconds with milliseconds
        ("1699999998500", 1.5),  # milliseconds
        ("1699999998500000", 1.5),  # microseconds
        ("t=1700000010", 0.0),  # a clock ahead of ours: no wait
        ("", 0.0),
        ("garbage", 0.0),
    ],
)
def test_the_request_start_header_gives_the_wait_in_front(header, waited):
    assert queued_in_front(header, NOW) == pytest.approx(waited)
