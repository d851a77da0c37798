"""Account deletion: the request, the link, the grace period, and what the deletion leaves."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import signing
from django.test import override_settings
from django.utils import timezone

from apps.account_deletion.services import (
    LINK_SALT,
    AccountDeleteError,
    account_delete,
    account_delete_cancel,
    account_delete_check,
    account_delete_confirm,
    account_delete_request,
    account_deletions_due,
)
from apps.account_deletion.tasks import account_deletions_task
from apps.hosts.models import DeletedHost, Host
from apps.portal.volunteer_selectors import project_totals
from apps.projects.models import DaemonRun
from apps.volunteers.models import Account, DeletedAccount, LoginLockout, Team
from apps.volunteers.services.weak_keys import account_weak_key, account_weak_key_matches
from tests.factories import AccountFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse"


@pytest.fixture
def team(db):
    return TeamFactory(project=ProjectFactory(slug="del"), total_credit=1000.0, expavg_credit=40.0)


@pytest.fixture
def ada(team):
    account = AccountFactory(
        project=team.project,
        name="Ada",
        email_addr="ada@example.com",
        password=PASSWORD,
        team=team,
        country="France",
        url="https://ada.example",
        total_credit=600.0,
        expavg_credit=25.0,
    )
    Team.objects.filter(pk=team.pk).update(founder=account)
    return account


def confirmed(account, now):
    token = account_delete_request(account=account, now=now)
    return account_delete_confirm(account=account, token=token, now=now)


def test_a_wrong_password_is_refused_and_nothing_is_recorded(ada):
    with pytest.raises(AccountDeleteError, match="Wrong password"):
        account_delete_check(account=ada, password="guess")
    assert Account.objects.get(pk=ada.pk).delete_requested is None


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=7)
def test_confirming_the_link_schedules_the_deletion_after_the_grace_period(ada, now):
    due = confirmed(ada, now)
    row = Account.objects.get(pk=ada.pk)
    assert due == now + timedelta(days=7)
    assert (row.delete_after, row.deleted_time, row.name) == (due, None, "Ada")


def test_a_link_older_than_a_day_has_expired(ada, now):
    token = account_delete_request(account=ada, now=now)
    later = timezone.now() + timedelta(days=1, minutes=1)
    with time_machine.travel(later), pytest.raises(AccountDeleteError, match="expired"):
        account_delete_confirm(account=ada, token=token, now=now)
    assert Account.objects.get(pk=ada.pk).delete_after is None


def test_someone_elses_link_is_refused(ada, team, now):
    bob = AccountFactory(project=team.project, password=PASSWORD)
    token = account_delete_request(account=bob, now=now)
    with pytest.raises(AccountDeleteError, match="another account"):
        account_delete_confirm(account=ada, token=token, now=now)
    assert Account.objects.filter(delete_after__isnull=False).count() == 0


def test_a_replayed_confirmation_is_refused(ada, now):
    token = account_delete_request(account=ada, now=now)
    account_delete_confirm(account=ada, token=token, now=now)
    account_delete_cancel(account=ada)
    with pytest.raises(AccountDeleteError, match="used already"):
        account_delete_confirm(account=ada, token=token, now=now)
    assert Account.objects.get(pk=ada.pk).delete_after is None


def test_a_newer_request_makes_the_older_link_useless(ada, now):
    old = account_delete_request(account=ada, now=now)
    account_delete_request(account=ada, now=now + timedelta(minutes=1))
    with pytest.raises(AccountDeleteError, match="replaced by a newer one"):
        account_delete_confirm(account=ada, token=old, now=now)


def test_a_forged_link_is_refused(ada, now):
    account_delete_request(account=ada, now=now)
    forged = signing.dumps([ada.pk, "0" * 32], salt=LINK_SALT)
    with pytest.raises(AccountDeleteError, match="replaced by a newer one"):
        account_delete_confirm(account=ada, token=forged, now=now)
    with pytest.raises(AccountDeleteError, match="not valid"):
        account_delete_confirm(account=ada, token="garbage", now=now)


def test_a_cancelled_deletion_is_not_carried_out(ada, now):
    confirmed(ada, now)
    account_delete_cancel(account=ada)
    account_deletions_due(project=ada.project, now=now + timedelta(days=30))
    assert Account.objects.get(pk=ada.pk).name == "Ada"


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=7)
def test_the_periodic_pass_deletes_only_accounts_past_their_grace_period(ada, now):
    confirmed(ada, now)
    assert account_deletions_due(project=ada.project, now=now + timedelta(days=6)).items == 0
    assert account_deletions_due(project=ada.project, now=now + timedelta(days=7)).items == 1
    assert Account.objects.get(pk=ada.pk).name == "deleted"


@override_settings(COBBLESTONE_ACCOUNT_DELETE_GRACE_DAYS=0)
def test_with_no_grace_period_confirming_deletes_at_once(ada, now):
    confirmed(ada, now)
    assert Account.objects.get(pk=ada.pk).deleted_time == now


def test_deletion_removes_what_names_the_person(ada, now):
    assert account_delete(account_id=ada.pk, now=now) is True
    row = Account.objects.get(pk=ada.pk)
    assert (row.name, row.country, row.url, row.team_id) == ("deleted", "", "", None)
    # Only the account's id and random hex, which may spell "ada" by chance.
    assert re.fullmatch(rf"deleted_{ada.pk}_[0-9a-f]{{16}}@deleted\.invalid", row.email_addr)
    assert row.stats_export_consent is False
    assert row.deleted_time == now


def test_deletion_keeps_the_credit_in_the_team_and_project_totals(ada, team, now):
    AccountFactory(project=team.project, total_credit=400.0)
    before = project_totals(team.project)["credit"]
    account_delete(account_id=ada.pk, now=now)
    assert Team.objects.get(pk=team.pk).total_credit == 1000.0
    assert project_totals(team.project)["credit"] == before == 1000.0


def test_deletion_leaves_the_founders_team_without_founder(ada, team, now):
    account_delete(account_id=ada.pk, now=now)
    assert Team.objects.get(pk=team.pk).founder_id is None


def test_deletion_revokes_the_account_key_weak_key_and_password(ada, now):
    key, weak = ada.authenticator, account_weak_key(ada)
    account_delete(account_id=ada.pk, now=now)
    row = Account.objects.get(pk=ada.pk)
    assert row.authenticator != key
    assert not Account.objects.filter(authenticator=key).exists()
    assert account_weak_key_matches(row, weak) is False
    assert row.check_passwd_hash(row.passwd_hash[:32]) is False


def test_deletion_keeps_hosts_without_their_names_and_addresses(ada, now):
    host = HostFactory(account=ada, domain_name="ada-laptop", last_ip_addr="192.0.2.7", total_credit=300)
    account_delete(account_id=ada.pk, now=now)
    row = Host.objects.get(pk=host.pk)
    assert (row.domain_name, row.last_ip_addr, row.total_credit) == ("", "", 300)


def test_deletion_lists_the_exported_user_and_hosts_as_deleted(ada, now):
    host = HostFactory(account=ada, host_cpid="c" * 32)
    cpid = ada.public_cpid
    account_delete(account_id=ada.pk, now=now)
    assert DeletedAccount.objects.get(userid=ada.pk).cpid == cpid
    assert DeletedHost.objects.get(hostid=host.pk).host_cpid == "c" * 32


def test_deletion_forgets_the_log_in_lockouts_naming_the_address(ada, now):
    LoginLockout.objects.create(
        scope="volunteer", kind="account", account="ada@example.com", time=now, until=now
    )
    account_delete(account_id=ada.pk, now=now)
    assert LoginLockout.objects.count() == 0


def test_deleting_twice_does_nothing_the_second_time(ada, now):
    account_delete(account_id=ada.pk, now=now)
    assert account_delete(account_id=ada.pk, now=now + timedelta(hours=1)) is False
    assert Account.objects.get(pk=ada.pk).deleted_time == now


def test_the_task_records_its_pass(ada, now):
    Account.objects.filter(pk=ada.pk).update(delete_after=now - timedelta(hours=1))
    assert account_deletions_task()["items"] == 1
    assert DaemonRun.objects.get(project=ada.project, daemon="account_deletions").items == 1
