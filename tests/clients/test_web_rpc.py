"""Attach-time web RPCs with BOINC's replies and error numbers."""

from __future__ import annotations

import hashlib

import pytest

from apps.protocol import parse_account_reply, parse_am_get_info_reply, parse_project_config
from apps.volunteers.models import Account, passwd_hash
from tests.factories import AccountFactory, AppVersionFactory, TeamFactory

pytestmark = pytest.mark.django_db

EMAIL = "test@example.com"
PW_HASH = passwd_hash("secretpw", EMAIL)


@pytest.fixture
def account(project):
    return AccountFactory(project=project, email_addr=EMAIL, passwd_hash=PW_HASH, name="Tester")


def rpc(client, project, page: str, query: str = ""):
    response = client.get(f"/{project.slug}/{page}" + (f"?{query}" if query else ""))
    assert response.status_code == 200
    return response


def account_rpc(client, project, page: str, query: str = ""):
    return parse_account_reply(rpc(client, project, page, query).content)


# --- get_project_config.php --------------------------------------------------------------


def test_project_config_names_the_project_and_its_platforms(client, project):
    AppVersionFactory(app__project=project, platform__name="x86_64-pc-linux-gnu", plan_class="")
    AppVersionFactory(app__project=project, platform__name="windows_x86_64", plan_class="cuda")
    config = parse_project_config(rpc(client, project, "get_project_config.php").content)
    assert config.name == "Client Test"
    assert config.master_url == project.master_url
    assert config.web_rpc_url_base == project.master_url
    assert config.min_passwd_length == 6
    assert config.account_creation_disabled is False
    assert config.error_num is None
    assert [(p.platform_name, p.plan_class) for p in config.platforms] == [
        ("windows_x86_64", "cuda"),
        ("x86_64-pc-linux-gnu", ""),
    ]


def test_project_config_reports_switches_and_web_stopped_as_project_down(client, project):
    project.account_creation_disabled = True
    project.web_stopped = True
    project.min_passwd_length = 10
    project.save()
    config = parse_project_config(rpc(client, project, "get_project_config.php").content)
    assert config.account_creation_disabled is True
    assert config.web_stopped is True
    assert config.min_passwd_length == 10
    assert config.error_num == -183


# --- lookup_account.php ------------------------------------------------------------------


def test_lookup_with_the_password_hash_gives_the_authenticator(client, project, account):
    # Exactly what boinccmd sent for Test@Example.com / secretpw: '.' escaped as %2E.
    reply = account_rpc(
        client, project, "lookup_account.php", f"email_addr=test%40example%2Ecom&passwd_hash={PW_HASH}"
    )
    assert reply.authenticator == account.authenticator
    assert reply.error_num is None


def test_lookup_accepts_the_account_key_hash(client, project, account):
    key_hash = hashlib.md5((account.authenticator + EMAIL).encode()).hexdigest()
    reply = account_rpc(client, project, "lookup_account.php", f"email_addr={EMAIL}&passwd_hash={key_hash}")
    assert reply.authenticator == account.authenticator


def test_lookup_without_a_hash_only_says_the_account_exists(client, project, account):
    body = rpc(client, project, "lookup_account.php", f"email_addr={EMAIL}").content
    assert b"<success/>" in body
    assert account.authenticator.encode() not in body


def test_lookup_with_a_wrong_password_is_error_206(client, project, account):
    wrong = passwd_hash("nope", EMAIL)
    reply = account_rpc(client, project, "lookup_account.php", f"email_addr={EMAIL}&passwd_hash={wrong}")
    assert (reply.authenticator, reply.error_num) == (None, -206)


def test_lookup_of_an_unknown_email_is_error_136(client, project, account):
    reply = account_rpc(client, project, "lookup_account.php", "email_addr=who%40example.com&passwd_hash=x")
    assert reply.error_num == -136


def test_lookup_without_an_email_is_error_1(client, project):
    reply = account_rpc(client, project, "lookup_account.php", f"passwd_hash={PW_HASH}")
    assert reply.error_num == -1
    assert "email_addr" in reply.error_msg


def test_lookup_while_the_web_is_stopped_is_error_183(client, project, account):
    project.web_stopped = True
    project.save()
    reply = account_rpc(client, project, "lookup_account.php", f"email_addr={EMAIL}&passwd_hash={PW_HASH}")
    assert reply.error_num == -183


def test_lookup_gives_a_passwordless_account_the_key_hash_as_password(client, project):
    account = AccountFactory(project=project, email_addr="nopw@example.com", passwd_hash="")
    key_hash = hashlib.md5((account.authenticator + "nopw@example.com").encode()).hexdigest()
    reply = account_rpc(
        client, project, "lookup_account.php", f"email_addr=nopw@example.com&passwd_hash={key_hash}"
    )
    assert reply.authenticator == account.authenticator
    account.refresh_from_db()
    assert account.passwd_hash != ""
    assert key_hash not in account.passwd_hash


# --- create_account.php ------------------------------------------------------------------


def create_query(email: str = "new%40example%2Eorg", pw_hash: str | None = None, name: str = "Newbie") -> str:
    pw_hash = pw_hash if pw_hash is not None else passwd_hash("longenough", "new@example.org")
    return f"email_addr={email}&passwd_hash={pw_hash}&user_name={name}"


def test_create_account_makes_an_account_and_returns_its_key(client, project):
    reply = account_rpc(client, project, "create_account.php", create_query())
    account = Account.objects.get(project=project, email_addr="new@example.org")
    assert reply.authenticator == account.authenticator
    assert account.name == "Newbie"
    assert account.check_passwd_hash(passwd_hash("longenough", "new@example.org")) is True


def test_create_account_lowercases_the_email(client, project):
    account_rpc(client, project, "create_account.php", create_query(email="New%40Example.ORG"))
    assert Account.objects.filter(project=project, email_addr="new@example.org").count() == 1


def test_create_account_again_with_the_same_hash_returns_the_same_key(client, project):
    first = account_rpc(client, project, "create_account.php", create_query())
    again = account_rpc(client, project, "create_account.php", create_query(name="Other"))
    assert again.authenticator == first.authenticator
    assert Account.objects.filter(project=project).count() == 1


def test_create_account_for_a_taken_email_with_another_hash_is_error_137(client, project, account):
    reply = account_rpc(client, project, "create_account.php", create_query(email=EMAIL, pw_hash="f" * 32))
    assert (reply.authenticator, reply.error_num) == (None, -137)


def test_create_account_when_disabled_is_error_208(client, project):
    project.account_creation_disabled = True
    project.save()
    assert account_rpc(client, project, "create_account.php", create_query()).error_num == -208
    assert not Account.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("query", "error_num"),
    [
        (create_query(pw_hash="abc"), -1),  # the hash must be 32 characters
        (create_query(email="not-an-email"), -205),
        (create_query(name="%3Cb%3Ebold%3C%2Fb%3E"), -188),
        (create_query(name="+padded"), -188),
        (create_query(name=""), -188),
        (create_query(name="12345"), -188),
        ("email_addr=a%40b.org&passwd_hash=" + "a" * 32, -1),  # user_name missing
    ],
)
def test_create_account_refusals(client, project, query, error_num):
    assert account_rpc(client, project, "create_account.php", query).error_num == error_num
    assert not Account.objects.filter(project=project).exists()


def test_create_account_joins_an_existing_team(client, project):
    team = TeamFactory(project=project, name="Crunchers")
    account_rpc(client, project, "create_account.php", create_query() + "&team_name=Crunchers")
    assert Account.objects.get(project=project).team == team


def test_create_account_does_not_join_a_team_closed_to_new_members(client, project):
    TeamFactory(project=project, name="Closed", joinable=False)
    reply = account_rpc(client, project, "create_account.php", create_query() + "&team_name=Closed")
    assert reply.authenticator  # the account is made, as BOINC's page makes it, without the team
    assert Account.objects.get(project=project).team is None


# --- am_get_info.php ---------------------------------------------------------------------


def test_am_get_info_describes_the_account(client, project, account):
    team = TeamFactory(project=project, founder=account)
    account.team = team
    account.country = "Côte d'Ivoire"
    account.save()
    info = parse_am_get_info_reply(
        rpc(client, project, "am_get_info.php", f"account_key={account.authenticator}").content
    )
    assert info["id"] == str(account.pk)
    assert info["name"] == "Tester"
    assert info["teamid"] == str(team.pk)
    assert "teamfounder" in info
    assert info["country"] == "C%C3%B4te+d%27Ivoire"  # urlencoded like the PHP page


def test_am_get_info_leaves_out_stored_preferences_that_are_not_xml(client, project, account):
    account.project_prefs = "<color>blue"
    account.save(update_fields=["project_prefs"])
    response = rpc(client, project, "am_get_info.php", f"account_key={account.authenticator}")
    info = parse_am_get_info_reply(response.content)
    assert (response.status_code, info["id"]) == (200, str(account.pk))
    assert "blue" not in response.content.decode()


def test_am_get_info_with_an_unknown_key_is_error_136(client, project):
    body = rpc(client, project, "am_get_info.php", "account_key=nope").content
    assert parse_account_reply(body).error_num == -136


def test_web_rpcs_of_an_unknown_project_are_404(client, db):
    assert client.get("/nope/get_project_config.php").status_code == 404
    assert client.get("/nope/lookup_account.php?email_addr=a").status_code == 404
