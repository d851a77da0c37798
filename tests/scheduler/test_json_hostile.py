"""Hostile JSON scheduler requests get a JSON error or the reply the XML face would give,
never a 500 or 503, and write nothing they should not."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.db import connection

from apps.hosts.models import Host
from apps.protocol import reply_from_dict, request_to_dict
from apps.work.models import Result
from tests.scheduler.conftest import make_jobs, make_request, reported

pytestmark = pytest.mark.django_db

ON_POSTGRESQL = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="only PostgreSQL refuses NUL in text"
)


def post_json(client, project, body: str):
    return client.post(
        f"/api/v1/projects/{project.slug}/scheduler/", data=body, content_type="application/json"
    )


def first_request(account, **host_info: str) -> dict[str, Any]:
    data = request_to_dict(make_request(account.authenticator))
    data["host_info"].update(host_info)
    return data


def report_request(client, project, account, cpu_app, stderr_out: str) -> dict[str, Any]:
    """A second RPC that reports the job the first one got, with this stderr."""
    make_jobs(project, cpu_app, 1)
    first = reply_from_dict(post_json(client, project, json.dumps(first_request(account))).json())
    report = reported(first.results[0].name)
    data = request_to_dict(
        make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1, results=(report,))
    )
    data["results"][0]["stderr_out"] = stderr_out
    return data


@ON_POSTGRESQL
@pytest.mark.parametrize(
    "where",
    ["authenticator", "platform_name", "host_cpid", "domain_name", "result_name", "stderr_out"],
)
def test_nul_in_any_string_gets_a_reply_not_a_server_error(client, project, account, cpu_app, where):
    data = report_request(client, project, account, cpu_app, "<stderr_txt>ok</stderr_txt>")
    if where in ("authenticator", "platform_name"):
        data[where] += "\x00"
    elif where in ("host_cpid", "domain_name"):
        data["host_info"][where] += "\x00"
    else:
        data["results"][0][where.removeprefix("result_")] += "\x00"
    response = post_json(client, project, json.dumps(data))
    assert response.status_code == 200, response.content[:500]
    assert reply_from_dict(response.json()).request_delay is not None


def test_control_characters_become_question_marks_as_in_the_xml_face(client, project, account):
    response = post_json(client, project, json.dumps(first_request(account, domain_name="my\x00host\x1b")))
    assert response.status_code == 200
    assert Host.objects.get().domain_name == "my?host?"


def test_a_lone_surrogate_is_stored_as_a_question_mark(client, project, account):
    body = json.dumps(first_request(account, domain_name="MARK")).replace("MARK", "my\\ud800host")
    response = post_json(client, project, body)
    assert response.status_code == 200
    assert Host.objects.get().domain_name == "my?host"


def test_stderr_with_control_characters_is_stored_scrubbed(client, project, account, cpu_app):
    data = report_request(client, project, account, cpu_app, "<stderr_txt>bad\x00\x07 output</stderr_txt>")
    response = post_json(client, project, json.dumps(data))
    assert response.status_code == 200
    assert Result.objects.get().stderr_out == "<stderr_txt>bad?? output</stderr_txt>"


def test_u_fffe_is_refused_as_the_xml_face_refuses_it(client, project, account):
    response = post_json(client, project, json.dumps(first_request(account, domain_name="my\ufffehost")))
    assert response.status_code == 400
    assert "Bad scheduler request" in response.json()["error"]
    assert not Host.objects.exists()


def test_json_nested_too_deep_to_parse_is_a_400_with_a_json_error(client, project, account):
    response = post_json(client, project, "[" * 1000 + "]" * 1000)
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]


def test_json_nested_deeper_than_the_xml_face_allows_is_refused(client, project, account):
    data = first_request(account)
    data["extra"] = json.loads('{"a": ' * 100 + "1" + "}" * 100)
    response = post_json(client, project, json.dumps(data))
    assert response.status_code == 400
    assert "nested deeper than 32 levels" in response.json()["error"]
    assert not Host.objects.exists()


def test_a_body_over_the_limit_is_413_with_a_json_error(client, project, account, settings):
    settings.COBBLESTONE_MAX_REQUEST_BYTES = 10_000
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 5_000  # Django's own check would answer in HTML
    response = post_json(client, project, json.dumps(first_request(account, domain_name="x" * 20_000)))
    assert response.status_code == 413
    assert response.json() == {"error": "Request too large (limit 10000 bytes)."}
    assert not Host.objects.exists()


def test_an_unknown_project_is_a_json_404(client, db):
    response = client.post("/api/v1/projects/nosuch/scheduler/", data="{}", content_type="application/json")
    assert response.status_code == 404
    assert response.json() == {"error": "No project at this URL."}


def test_a_compressed_body_is_a_json_415_and_writes_nothing(client, project, account):
    body = gzip.compress(json.dumps(first_request(account)).encode())
    response = client.post(
        f"/api/v1/projects/{project.slug}/scheduler/",
        data=body,
        content_type="application/json",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert response.status_code == 415
    assert "send the request uncompressed" in response.json()["error"]
    assert not Host.objects.exists()
