"""The account managers' RPCs (BAM!, Science United): am_get_info.php, am_set_host_info.php,
am_set_info.php, and their sign-ups from an allow-listed address."""

from __future__ import annotations

import gzip
import hashlib
from datetime import UTC, datetime

import pytest
from lxml import etree

from apps.hosts.models import Host
from apps.portal.stats_export import stats_dir, stats_export_write
from apps.protocol import parse_account_reply, parse_am_get_info_reply
from apps.volunteers.models import passwd_hash
from tests.factories import AccountFactory, HostFactory

pytestmark = pytest.mark.django_db

EMAIL = "am@example.com"


@pytest.fixture
def account(project):
    return AccountFactory(
        project=project, email_addr=EMAIL, name="Manager", password="secretpw", venue="work"
    )


def get(client, project, page: str, query: str = "", **extra):
    response = client.get(f"/{project.slug}/{page}" + (f"?{query}" if query else ""), **extra)
    assert response.status_code == 200, response.content
    return response


def am_info(client, project, account) -> dict[str, str]:
    return parse_am_get_info_reply(
        get(client, project, "am_get_info.php", f"account_key={account.authenticator}").content
    )


def test_am_get_info_sends_every_field_of_boincs_reply_in_its_order(client, project, account):
    body = get(client, project, "am_get_info.php", f"account_key={account.authenticator}").content
    tags = [e.tag for e in etree.fromstring(body)]
    assert tags == [
        "success", "id", "name", "country", "weak_auth", "cpid", "has_profile", "create_time",
        "global_prefs", "project_prefs", "url", "send_email", "show_hosts", "teamid", "venue",
    ]  # fmt: skip


def test_am_get_info_gives_the_weak_key_creation_time_and_venue(client, project, account):
    info = am_info(client, project, account)
    digest = hashlib.md5((account.authenticator + account.passwd_hash).encode()).hexdigest()
    assert info["weak_auth"] == f"{account.pk}_{digest}"
    assert info["create_time"] == str(int(account.create_time.timestamp()))
    assert (info["has_profile"], info["venue"]) == ("0", "work")


def test_am_get_info_gives_the_cpid_the_statistics_export_shows(client, project, account, settings, tmp_path):
    settings.COBBLESTONE_DATA_DIR = tmp_path
    stats_export_write(project=project, now=datetime.now(UTC))
    users = etree.fromstring(gzip.decompress((stats_dir(project) / "user.gz").read_bytes()))
    [exported] = users.xpath("//user/cpid/text()")
    assert am_info(client, project, account)["cpid"] == exported


def test_am_get_info_with_the_weak_key_is_error_136(client, project, account):
    weak = am_info(client, project, account)["weak_auth"]
    body = get(client, project, "am_get_info.php", f"account_key={weak}").content
    assert parse_account_reply(body).error_num == -136


def test_am_get_info_without_a_key_is_error_1(client, project):
    assert parse_account_reply(get(client, project, "am_get_info.php").content).error_num == -1


def test_wrong_keys_count_as_failed_log_ins_until_the_address_is_refused(client, project, account, settings):
    settings.COBBLESTONE_RATELIMIT_LOGIN_IP = "3/15m"
    for _ in range(3):
        assert (
            parse_account_reply(get(client, project, "am_get_info.php", "account_key=nope").content).error_num
            == -136
        )
    response = get(client, project, "am_get_info.php", f"account_key={account.authenticator}")
    assert parse_account_reply(response.content).error_num == -199
    assert int(response["Retry-After"]) > 0


def test_am_set_host_info_sets_the_venue_of_the_accounts_host(client, project, account):
    host = HostFactory(project=project, account=account, venue="")
    query = f"account_key={account.authenticator}&hostid={host.pk}&venue=school"
    body = get(client, project, "am_set_host_info.php", query).content
    assert body == b"<am_set_host_info_reply>\n    <success/>\n</am_set_host_info_reply>\n"
    assert Host.objects.get(pk=host.pk).venue == "school"


def test_am_set_host_info_on_another_accounts_host_is_error_136(client, project, account):
    host = HostFactory(account=AccountFactory(project=project), venue="home")
    query = f"account_key={account.authenticator}&hostid={host.pk}&venue=school"
    assert parse_account_reply(get(client, project, "am_set_host_info.php", query).content).error_num == -136
    assert Host.objects.get(pk=host.pk).venue == "home"


@pytest.mark.parametrize(
    "query",
    [
        "hostid=1&venue=home",
        "account_key=K&venue=home",
        "account_key=K&hostid=x&venue=home",
        "account_key=K&hostid=1",
    ],
)
def test_am_set_host_info_with_a_missing_or_bad_parameter_is_error_1(client, project, account, query):
    host = HostFactory(project=project, account=account)
    query = query.replace("account_key=K", f"account_key={account.authenticator}").replace(
        "hostid=1", f"hostid={host.pk}"
    )
    assert parse_account_reply(get(client, project, "am_set_host_info.php", query).content).error_num == -1


def test_am_set_host_info_refuses_an_unknown_venue(client, project, account):
    host = HostFactory(project=project, account=account, venue="home")
    query = f"account_key={account.authenticator}&hostid={host.pk}&venue=moon"
    assert parse_account_reply(get(client, project, "am_set_host_info.php", query).content).error_num == -1
    assert Host.objects.get(pk=host.pk).venue == "home"


@pytest.mark.parametrize("method", ["get", "post"])
def test_am_set_info_answers_not_supported_as_boincs_current_server(client, project, account, method):
    response = getattr(client, method)(
        f"/{project.slug}/am_set_info.php?account_key={account.authenticator}&name=X"
    )
    reply = parse_account_reply(response.content)
    assert (response.status_code, reply.error_num, reply.error_msg) == (200, -1, "not supported")
    account.refresh_from_db()
    assert account.name == "Manager"


def create(client, project, n: int, ip: str):
    email = f"new{n}@example.com"
    query = f"email_addr={email}&passwd_hash={passwd_hash('pw123456', email)}&user_name=New"
    return parse_account_reply(get(client, project, "create_account.php", query, REMOTE_ADDR=ip).content)


def test_an_account_managers_server_is_not_held_to_the_sign_up_limit(client, project, settings):
    settings.COBBLESTONE_RATELIMIT_SIGNUP_IP = "2/h"
    settings.COBBLESTONE_ACCOUNT_MANAGER_NETWORKS = ["198.51.100.0/24"]
    replies = [create(client, project, n, "198.51.100.7") for n in range(4)]
    assert all(r.authenticator for r in replies)


def test_other_addresses_keep_the_sign_up_limit(client, project, settings):
    settings.COBBLESTONE_RATELIMIT_SIGNUP_IP = "2/h"
    settings.COBBLESTONE_ACCOUNT_MANAGER_NETWORKS = ["198.51.100.0/24"]
    replies = [create(client, project, n, "192.0.2.9") for n in range(3)]
    assert [r.error_num for r in replies] == [None, None, -199]
