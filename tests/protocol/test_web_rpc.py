"""Attach-time web RPC replies and am_get_info."""

from __future__ import annotations

import pytest

from apps.protocol import (
    AmInfo,
    PlatformDesc,
    ProjectConfig,
    WebRpcError,
    parse_account_reply,
    parse_am_get_info_reply,
    parse_project_config,
    render_account_out,
    render_am_get_info_reply,
    render_error,
    render_project_config,
)


def test_project_config_round_trip_and_shape():
    config = ProjectConfig(
        name="My Test Project",
        master_url="http://127.0.0.1:8000/",
        web_rpc_url_base="http://127.0.0.1:8000/",
        local_revision="1",
        min_passwd_length=6,
        uses_username=True,
        min_client_version=70000,
        platforms=(PlatformDesc("x86_64-pc-linux-gnu", "Linux on x86_64"),),
        terms_of_use="Be nice.",
    )

    body = render_project_config(config)

    assert parse_project_config(body) == config
    assert b"    <uses_username/>\n" in body
    assert b"    <web_stopped>0</web_stopped>\n" in body
    assert (
        b"<platforms>\n        <platform>\n            <platform_name>x86_64-pc-linux-gnu</platform_name>"
        in body
    )


def test_project_config_error():
    config = parse_project_config(render_project_config(ProjectConfig(error_num=WebRpcError.PROJECT_DOWN)))

    assert config.error_num == -183


def test_account_out():
    assert (
        render_account_out("key1")
        == b"<account_out>\n    <authenticator>key1</authenticator>\n</account_out>\n"
    )
    assert render_account_out(None) == b"<account_out>\n    <success/>\n</account_out>\n"
    assert parse_account_reply(render_account_out("key1")).authenticator == "key1"


@pytest.mark.parametrize(
    ("error", "number"),
    [
        (WebRpcError.NOT_FOUND, -136),
        (WebRpcError.BAD_PASSWD, -206),
        (WebRpcError.NOT_UNIQUE, -137),
        (WebRpcError.BAD_EMAIL_ADDR, -205),
        (WebRpcError.ACCT_CREATION_DISABLED, -208),
        (WebRpcError.BAD_USER_NAME, -188),
        (WebRpcError.PROJECT_DOWN, -183),
    ],
)
def test_error_constants_and_reply(error, number):
    reply = parse_account_reply(render_error(error))

    assert error == number
    assert reply.error_num == number
    assert reply.error_msg
    assert reply.authenticator is None


def test_error_with_own_message():
    assert b"<error_msg>nope &amp; never</error_msg>" in render_error(-1, "nope & never")


def test_am_get_info_reply_format():
    info = AmInfo(
        id=12,
        name="Joe Q. Public",
        country="United States",
        global_prefs="<run_on_batteries>0</run_on_batteries>",
        project_prefs="<resource_share>100</resource_share>",
        url="http://x.example/~joe",
        send_email=True,
        teamid=3,
        teamfounder=True,
    )

    body = render_am_get_info_reply(info)
    values = parse_am_get_info_reply(body)

    assert body.startswith(b"<am_get_info_reply>\n    <success/>\n    <id>12</id>\n")
    assert values["name"] == "Joe+Q.+Public"
    assert values["country"] == "United+States"
    assert values["url"] == "http%3A%2F%2Fx.example%2F%7Ejoe"
    assert values["project_prefs"] == "<resource_share>100</resource_share>"
    assert values["send_email"] == "1"
    assert values["teamid"] == "3"
    assert "teamfounder" in values
