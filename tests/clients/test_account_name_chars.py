"""Account RPCs and pages refuse characters no reply could carry, with BOINC's error replies."""

from __future__ import annotations

import pytest

from apps.protocol import parse_account_reply
from apps.volunteers.models import Account, passwd_hash
from apps.volunteers.services import user_name_problem

pytestmark = pytest.mark.django_db

PW_HASH = passwd_hash("longenough", "new@example.org")


def account_rpc(client, project, page: str, query: str):
    response = client.get(f"/{project.slug}/{page}?{query}")
    assert response.status_code == 200
    return parse_account_reply(response.content)


def create_query(*, email: str = "new%40example.org", pw_hash: str = PW_HASH, name: str = "Newbie") -> str:
    return f"email_addr={email}&passwd_hash={pw_hash}&user_name={name}"


@pytest.mark.parametrize(
    "name",
    [
        "Ada%01Lovelace",
        "Ada%1BLovelace",
        "Ada%09Lovelace",
        "Ada%0ALovelace",
        "Ada%7FLovelace",
        "Ada%C2%85Lovelace",
    ],
    ids=["soh", "escape", "tab", "newline", "delete", "c1-next-line"],
)
def test_create_account_refuses_a_user_name_with_control_characters(client, project, name):
    reply = account_rpc(client, project, "create_account.php", create_query(name=name))
    assert (reply.error_num, reply.error_msg) == (-188, "user name may not contain control characters")
    assert not Account.objects.exists()


@pytest.mark.parametrize("name", ["Ada%EF%BF%BE", "Ada%EF%BF%BF"], ids=["U+FFFE", "U+FFFF"])
def test_create_account_refuses_a_user_name_with_a_non_character(client, project, name):
    reply = account_rpc(client, project, "create_account.php", create_query(name=name))
    assert (reply.error_num, reply.error_msg) == (
        -188,
        "user name may not contain invalid Unicode characters",
    )
    assert not Account.objects.exists()


def test_a_lone_surrogate_is_not_a_valid_user_name():
    # Query strings are decoded with replacement, so only Python callers can pass one.
    assert user_name_problem("Ada\ud800") == "user name may not contain invalid Unicode characters"


def test_signup_refuses_a_name_with_control_characters(client, project):
    data = {"name": "Ada\x07Lovelace", "email": "ada@example.org", "password": "longpassword"}
    response = client.post(f"/{project.slug}/signup/", data)
    assert response.status_code == 200
    assert "User name may not contain control characters." in response.content.decode()
    assert not Account.objects.exists()


@pytest.mark.parametrize(
    ("page", "query", "param"),
    [
        ("create_account.php", create_query(email="new%00%40example.org"), "email_addr"),
        ("create_account.php", create_query(pw_hash="%00" + PW_HASH[1:]), "passwd_hash"),
        ("create_account.php", create_query(name="%00bad"), "user_name"),
        ("create_account.php", create_query() + "&team_name=Crunch%00ers", "team_name"),
        ("lookup_account.php", f"email_addr=x%00%40example.org&passwd_hash={PW_HASH}", "email_addr"),
        ("am_get_info.php", "account_key=%00", "account_key"),
    ],
    ids=["create-email", "create-hash", "create-name", "create-team", "lookup-email", "am-get-info-key"],
)
def test_nul_in_a_parameter_is_a_well_formed_error_reply(client, project, page, query, param):
    # NUL cannot be stored in PostgreSQL text; it is refused before any query.
    reply = account_rpc(client, project, page, query)
    assert (reply.error_num, reply.error_msg) == (
        -1,
        f"bad parameter: {param} may not contain NUL characters",
    )
    assert not Account.objects.exists()
