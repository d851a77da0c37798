"""Trickle messages through the scheduler RPC: stored once, acknowledged, trickle-downs delivered."""

from __future__ import annotations

import pytest

from apps.core import clock
from apps.protocol import render_request
from apps.trickles.models import HandledState, MsgFromHost, MsgToHost
from apps.trickles.services import trickle_down_create
from tests.factories import HostFactory, ResultFactory
from tests.trickles.conftest import trickle

pytestmark = pytest.mark.django_db


def test_a_trickle_up_is_stored_and_acknowledged(volunteer):
    reply = volunteer.rpc(trickle(volunteer.result.name, body="<fraction_done>0.5</fraction_done>"))

    message = MsgFromHost.objects.get()
    assert reply.message_ack is True
    assert (message.host_id, message.result_id, message.variety) == (
        volunteer.hostid,
        volunteer.result.id,
        "progress",
    )
    assert message.xml == "<variety>progress</variety>\n<fraction_done>0.5</fraction_done>"
    assert message.handled == HandledState.UNHANDLED


def test_a_trickle_sent_again_is_stored_once(volunteer):
    sent = trickle(volunteer.result.name, body="<n>1</n>")
    volunteer.rpc(sent)
    again = volunteer.rpc(sent)

    assert again.message_ack is True
    assert MsgFromHost.objects.count() == 1


def test_two_trickles_of_the_same_second_are_both_stored(volunteer):
    name = volunteer.result.name
    volunteer.rpc(trickle(name, body="<n>1</n>"), trickle(name, body="<n>2</n>"))

    assert MsgFromHost.objects.count() == 2


def test_a_request_without_trickles_gets_no_ack(volunteer):
    assert volunteer.rpc().message_ack is False


def test_a_trickle_naming_a_task_of_another_host_is_ignored_and_the_rest_stored(volunteer, cpu_app):
    other = ResultFactory(workunit__app=cpu_app, host=HostFactory(account=volunteer.account))
    reply = volunteer.rpc(trickle(other.name), trickle("no_such_task_0"), trickle(volunteer.result.name))

    assert reply.message_ack is True
    assert list(MsgFromHost.objects.values_list("result_name", flat=True)) == [volunteer.result.name]


def test_a_trickle_body_over_the_limit_is_ignored(volunteer, settings):
    settings.COBBLESTONE_MAX_TRICKLE_BYTES = 100
    reply = volunteer.rpc(
        trickle(volunteer.result.name, body="<blob>" + "x" * 200 + "</blob>"),
        trickle(volunteer.result.name, body="<n>1</n>"),
    )

    assert reply.message_ack is True
    assert list(MsgFromHost.objects.values_list("xml", flat=True)) == [
        "<variety>progress</variety>\n<n>1</n>"
    ]


def test_a_trickle_body_that_is_not_xml_is_ignored_and_the_request_handled(volunteer):
    name = volunteer.result.name
    request = volunteer.request(
        trickle(name, body="<bad>1</bad>", time=1), trickle(name, body="<good>1</good>", time=2)
    )
    body = render_request(request).replace(b"<bad>1</bad>", b"x < y & <unclosed>")

    reply = volunteer.rpc(raw=body)

    assert reply.message_ack is True
    assert reply.project_name == "Scheduler Test"
    assert list(MsgFromHost.objects.values_list("xml", flat=True)) == [
        "<variety>progress</variety>\n<good>1</good>"
    ]


def test_stored_trickles_are_queued_for_their_handlers_after_the_commit(
    volunteer, monkeypatch, django_capture_on_commit_callbacks
):
    queued: list[list[int]] = []
    monkeypatch.setattr("apps.trickles.inbox.trickles_enqueue", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        volunteer.rpc(trickle(volunteer.result.name))
    with django_capture_on_commit_callbacks(execute=True):
        volunteer.rpc(trickle(volunteer.result.name))  # sent again: nothing new to handle

    assert queued == [[MsgFromHost.objects.get().id]]


def test_a_trickle_down_goes_out_in_the_next_reply_once(volunteer, project):
    down = trickle_down_create(
        project=project,
        host_id=volunteer.hostid,
        variety="boost",
        body="<factor>2</factor>",
        result_name=volunteer.result.name,
        now=clock.now(),
    )

    first = volunteer.rpc()
    second = volunteer.rpc()

    assert [(t.result_name, t.body) for t in first.trickle_downs] == [
        (volunteer.result.name, "<variety>boost</variety>\n<factor>2</factor>")
    ]
    assert second.trickle_downs == ()
    down.refresh_from_db()
    assert down.delivered
    assert down.delivered_time is not None


def test_a_trickle_down_naming_no_task_goes_to_the_task_in_progress(volunteer, project):
    trickle_down_create(project=project, host_id=volunteer.hostid, variety="v", body="", now=clock.now())

    reply = volunteer.rpc()

    assert [t.result_name for t in reply.trickle_downs] == [volunteer.result.name]
    assert MsgToHost.objects.get().delivered


def test_trickle_downs_of_one_second_go_out_with_distinct_times(volunteer, project):
    now = clock.now()
    for factor in (1, 2):
        trickle_down_create(
            project=project, host_id=volunteer.hostid, variety="v", body=f"<f>{factor}</f>", now=now
        )

    reply = volunteer.rpc()

    assert len({t.time for t in reply.trickle_downs}) == 2
