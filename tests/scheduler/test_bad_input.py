"""Hostile or broken requests get a well-formed reply and change nothing."""

import gzip

import pytest
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.hosts.models import Host
from apps.protocol import parse_reply, render_request
from tests.scheduler.conftest import make_jobs, make_request

pytestmark = pytest.mark.django_db

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<scheduler_request><authenticator>&lol3;</authenticator></scheduler_request>"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<scheduler_request><authenticator>&x;</authenticator></scheduler_request>"""


def post(client, project, body: bytes):
    return client.post(f"/{project.slug}/cgi", data=body, content_type="application/x-www-form-urlencoded")


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<scheduler_request><authenticator>abc",
        b"<not_a_request/>",
        b"\xff\xfe garbage",
        BILLION_LAUGHS,
        EXTERNAL_ENTITY,
        b"<scheduler_request>" + b"<a>" * 5000 + b"</a>" * 5000 + b"</scheduler_request>",
    ],
    ids=["empty", "truncated", "wrong-root", "binary", "billion-laughs", "external-entity", "deep"],
)
def test_malformed_requests_get_a_well_formed_error_reply(client, project, account, body):
    response = post(client, project, body)
    assert response.status_code == 200
    reply = parse_reply(response.content)
    assert reply.messages
    assert Host.objects.count() == 0


@pytest.mark.parametrize("value", ["nan", "-5", "1e308", "inf"])
def test_absurd_numbers_get_an_error_reply_and_write_nothing(client, project, account, value):
    body = render_request(make_request(account.authenticator)).replace(
        b"<p_fpops>1000000000.000000</p_fpops>", f"<p_fpops>{value}</p_fpops>".encode()
    )
    response = post(client, project, body)
    reply = parse_reply(response.content)
    assert response.status_code == 200
    assert "Bad scheduler request" in reply.messages[0].text
    assert Host.objects.count() == 0


def test_body_over_the_limit_is_413_with_a_reply(client, project, settings):
    settings.COBBLESTONE_MAX_REQUEST_BYTES = 10_000
    response = post(client, project, b"<scheduler_request>" + b" " * 20_000 + b"</scheduler_request>")
    assert response.status_code == 413
    assert b"<scheduler_reply>" in response.content


def test_get_is_405_with_a_reply_saying_to_post(client, project):
    response = client.get(f"/{project.slug}/cgi")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert "sent by POST" in parse_reply(response.content).messages[0].text


def test_an_unknown_project_is_404_with_a_reply(client, db):
    response = client.post("/nosuch/cgi", data=b"<scheduler_request/>", content_type="text/xml")
    assert response.status_code == 404
    assert parse_reply(response.content).messages[0].text == "No project at this URL."


def test_a_content_length_that_is_not_a_number_is_400_and_writes_nothing(client, project, account):
    body = render_request(make_request(account.authenticator))
    response = client.post(
        f"/{project.slug}/cgi",
        data=body,
        content_type="application/x-www-form-urlencoded",
        CONTENT_LENGTH="12x",
    )
    assert response.status_code == 400
    assert parse_reply(response.content).messages[0].text == "Content-Length is not a number."
    assert Host.objects.count() == 0


def test_a_compressed_body_is_415_and_writes_nothing(client, project, account):
    body = gzip.compress(render_request(make_request(account.authenticator)))
    response = client.post(
        f"/{project.slug}/cgi",
        data=body,
        content_type="application/x-www-form-urlencoded",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 415
    assert "send the request uncompressed" in parse_reply(response.content).messages[0].text
    assert Host.objects.count() == 0


def test_json_face_rejects_bad_json_values_with_400(client, project, account):
    response = client.post(
        f"/api/v1/projects/{project.slug}/scheduler/",
        data={"authenticator": account.authenticator, "host_info": {"p_fpops": "nan"}},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "Bad scheduler request" in response.json()["error"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=3000), junk=st.binary(max_size=40))
def test_mutated_requests_never_cause_a_server_error(client, project, account, cut, junk):
    body = render_request(make_request(account.authenticator))
    mutated = body[:cut] + junk + body[cut + len(junk) :]
    response = post(client, project, mutated)
    assert response.status_code == 200
    assert parse_reply(response.content) is not None


def test_a_stored_name_xml_cannot_carry_still_gets_the_client_its_jobs(client, project, account, cpu_app):
    # Names come from web forms and the admin, not only from the scheduler's own parser.
    make_jobs(project, cpu_app, 2)
    account.name = "bad\x01name"
    account.save(update_fields=["name"])
    response = post(client, project, render_request(make_request(account.authenticator)))
    reply = parse_reply(response.content)
    assert response.status_code == 200
    assert reply.user_name == "bad?name"
    assert len(reply.results) == 1


def test_stored_preferences_that_are_not_xml_are_left_out_not_the_jobs(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 2)
    account.project_prefs = "<color>blue"  # edited by hand, never closed
    account.save(update_fields=["project_prefs"])
    response = post(client, project, render_request(make_request(account.authenticator)))
    reply = parse_reply(response.content)
    assert len(reply.results) == 1
    assert reply.project_preferences == ""


def test_the_admin_refuses_preferences_that_are_not_xml(account):
    account.project_prefs = "<color>blue"
    with pytest.raises(ValidationError) as refused:
        account.full_clean()
    assert set(refused.value.message_dict) == {"project_prefs"}
