"""A deleted user leaves the statistics export and is listed as deleted."""

from __future__ import annotations

import gzip

import pytest
from lxml import etree

from apps.account_deletion.services import account_delete
from apps.portal.stats_export import stats_dir, stats_export_write
from tests.factories import AccountFactory, HostFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def read_gz(project, name):
    with gzip.open(stats_dir(project) / name) as f:
        return etree.fromstring(f.read())


@pytest.fixture
def ada(db):
    account = AccountFactory(project=ProjectFactory(slug="sx"), name="Ada", total_credit=10.0)
    HostFactory(account=account, host_cpid="h" * 32)
    AccountFactory(project=account.project, name="Bob")
    return account


def test_a_deleted_user_and_their_hosts_leave_the_export(ada, now):
    account_delete(account_id=ada.pk, now=now)
    stats_export_write(project=ada.project, now=now)
    assert [u.findtext("name") for u in read_gz(ada.project, "user.gz")] == ["Bob"]
    assert read_gz(ada.project, "host.gz").findall("host") == []


def test_a_deleted_user_and_their_hosts_are_listed_as_deleted(ada, now):
    cpid = ada.public_cpid
    account_delete(account_id=ada.pk, now=now)
    stats_export_write(project=ada.project, now=now)
    [user] = read_gz(ada.project, "user_deleted.gz")
    [host] = read_gz(ada.project, "host_deleted.gz")
    assert (user.findtext("id"), user.findtext("cpid")) == (str(ada.pk), cpid)
    assert host.findtext("host_cpid") == "h" * 32
