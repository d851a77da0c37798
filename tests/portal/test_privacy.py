"""What the public pages give away: host_cpid only in the consent-filtered statistics export,
no domain names, no venue of a hidden computer, and a user's cpid only with stats export consent
(security review)."""

from __future__ import annotations

import gzip

import pytest
from lxml import etree

from apps.portal.stats_export import stats_dir, stats_export_write
from tests.factories import AccountFactory, HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db

HOST_CPID = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def project():
    return ProjectFactory(slug="pv", stats_export=True)


def user_xml(client, account):
    return etree.fromstring(client.get(f"/pv/show_user.php?userid={account.id}&format=xml").content)


def test_public_host_xml_has_no_host_cpid(client, project):
    host = HostFactory(account__project=project, host_cpid=HOST_CPID)
    body = client.get(f"/pv/show_host_detail.php?hostid={host.id}&format=xml").content.decode()
    assert f"<id>{host.id}</id>" in body
    assert HOST_CPID not in body


def test_public_host_xml_of_a_hidden_host_of_a_declining_user_has_no_host_cpid(client, project):
    owner = AccountFactory(project=project, show_hosts=False, stats_export_consent=False)
    host = HostFactory(account=owner, host_cpid=HOST_CPID)
    body = client.get(f"/pv/show_host_detail.php?hostid={host.id}&format=xml").content.decode()
    assert HOST_CPID not in body


def test_user_xml_lists_hosts_without_their_host_cpid(client, project):
    host = HostFactory(account__project=project, host_cpid=HOST_CPID)
    root = user_xml(client, host.account)
    assert [h.findtext("id") for h in root.findall("host")] == [str(host.id)]
    assert HOST_CPID not in etree.tostring(root).decode()


def test_statistics_export_keeps_the_host_cpid_of_consenting_users(project, now):
    HostFactory(account__project=project, host_cpid=HOST_CPID)
    stats_export_write(project=project, now=now)
    with gzip.open(stats_dir(project) / "host.gz") as f:
        hosts = etree.fromstring(f.read())
    assert [h.findtext("host_cpid") for h in hosts.findall("host")] == [HOST_CPID]


def test_user_page_does_not_show_domain_names(client, project):
    host = HostFactory(account__project=project, domain_name="ada-secret-laptop")
    body = client.get(f"/pv/show_user.php?userid={host.account_id}").content.decode()
    assert f"hostid={host.id}" in body
    assert "ada-secret-laptop" not in body


def test_user_xml_has_no_cpid_without_consent(client, project):
    account = AccountFactory(project=project, stats_export_consent=False)
    root = user_xml(client, account)
    assert root.findtext("id") == str(account.id)
    assert root.find("cpid") is None


def test_user_xml_has_the_cpid_with_consent(client, project):
    account = AccountFactory(project=project, stats_export_consent=True)
    assert user_xml(client, account).findtext("cpid") == account.public_cpid


def test_user_json_has_no_cpid_without_consent(client, project):
    account = AccountFactory(project=project, stats_export_consent=False)
    body = client.get(f"/api/v1/projects/pv/users/{account.id}/").json()
    assert body["id"] == account.id
    assert body["cpid"] is None


def test_user_list_json_gives_cpids_of_consenting_users_only(client, project):
    consenting = AccountFactory(project=project, name="Ada", expavg_credit=2.0)
    declining = AccountFactory(project=project, name="Bob", expavg_credit=1.0, stats_export_consent=False)
    users = client.get("/api/v1/projects/pv/users/").json()["results"]
    assert [(u["name"], u["cpid"]) for u in users] == [("Ada", consenting.public_cpid), ("Bob", None)]
    assert declining.public_cpid not in str(users)


def venue_cell(client, host) -> str:
    page = client.get(f"/pv/show_host_detail.php?hostid={host.id}").content.decode()
    return page[page.index('id="host-venue"') :].split("</td>", 1)[0]


def test_host_page_shows_the_venue_of_a_user_who_shows_their_computers(client, project):
    host = HostFactory(account__project=project, account__show_hosts=True, venue="school")
    assert "school" in venue_cell(client, host)


def test_host_page_hides_the_venue_of_a_user_who_hides_their_computers(client, project):
    host = HostFactory(account__project=project, account__show_hosts=False, venue="school")
    cell = venue_cell(client, host)
    assert "school" not in cell
    assert "hidden" in cell
