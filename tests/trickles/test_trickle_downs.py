"""Creating trickle-downs: manage.py send_trickle_down, the operators' API and the admin."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from apps.trickles.models import MsgToHost

pytestmark = pytest.mark.django_db

URL = "/api/v1/projects/sched/trickle_downs/"


def test_the_command_queues_a_trickle_down_for_the_task_named(volunteer, tmp_path):
    body = tmp_path / "body.xml"
    body.write_text("<factor>2</factor>\n")

    call_command(
        "send_trickle_down",
        "--project=sched",
        f"--host={volunteer.hostid}",
        "--variety=boost",
        f"--file={body}",
        f"--result={volunteer.result.name}",
    )

    message = MsgToHost.objects.get()
    assert (message.host_id, message.variety, message.xml, message.result_name) == (
        volunteer.hostid,
        "boost",
        "<factor>2</factor>",
        volunteer.result.name,
    )
    assert [t.result_name for t in volunteer.rpc().trickle_downs] == [volunteer.result.name]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({"host": 999999}, "has no host 999999"),
        ({"body": "<open>"}, "not XML content"),
        ({"result": "someone_elses_0"}, "does not hold a task named someone_elses_0"),
        ({"variety": "<b>"}, "variety must be"),
    ],
)
def test_the_command_refuses_bad_input_and_creates_nothing(volunteer, tmp_path, args, why):
    body = tmp_path / "body.xml"
    body.write_text(args.get("body", "<x/>"))
    options = [
        "--project=sched",
        f"--host={args.get('host', volunteer.hostid)}",
        f"--variety={args.get('variety', 'v')}",
        f"--file={body}",
        f"--result={args.get('result', '')}",
    ]

    with pytest.raises(CommandError, match=why):
        call_command("send_trickle_down", *options)
    assert not MsgToHost.objects.exists()


@pytest.fixture
def operator(client):
    client.force_login(get_user_model().objects.create_superuser("op", "op@example.com", "pw"))
    return client


def test_the_api_creates_a_trickle_down_and_lists_it(volunteer, operator):
    created = operator.post(
        URL,
        {"host": volunteer.hostid, "variety": "boost", "xml": "<factor>2</factor>"},
        content_type="application/json",
    )
    listed = operator.get(URL)

    assert created.status_code == 201
    assert created.json()["delivered"] is False
    assert [m["variety"] for m in listed.json()["results"]] == ["boost"]


def test_the_api_refuses_a_body_that_is_not_xml(volunteer, operator):
    response = operator.post(
        URL, {"host": volunteer.hostid, "variety": "boost", "xml": "a < b"}, content_type="application/json"
    )

    assert response.status_code == 400
    assert "not XML content" in response.json()["error"]
    assert not MsgToHost.objects.exists()


def test_the_admin_creates_a_trickle_down(volunteer, operator):
    response = operator.post(
        "/admin/trickles/msgtohost/add/",
        {
            "project": volunteer.project.id,
            "host": volunteer.hostid,
            "result_name": "",
            "variety": "boost",
            "xml": "<factor>3</factor>",
        },
    )

    assert response.status_code == 302, response.content[:2000]
    assert MsgToHost.objects.get().xml == "<factor>3</factor>"


def test_the_admin_lists_trickle_ups(volunteer, operator):
    from tests.trickles.conftest import trickle

    volunteer.rpc(trickle(volunteer.result.name, variety="progress"))

    response = operator.get("/admin/trickles/msgfromhost/")

    assert response.status_code == 200
    assert b"progress" in response.content


def test_the_api_answers_404_for_an_unknown_project(operator):
    assert operator.get("/api/v1/projects/nosuch/trickle_ups/").status_code == 404
