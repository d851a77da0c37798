"""db_purge's idle-row rules: hosts that never earned credit and went quiet, accounts never
used, archived and deleted (and listed as deleted in the statistics export); everything
else stays, and nothing goes while the settings are off."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timedelta

import pytest

from apps.hosts.models import DeletedHost, Host
from apps.submit.models import UserSubmit
from apps.volunteers.models import Account, DeletedAccount
from apps.work.services.daemons import daemon_run
from apps.work.services.dead_rows import dead_rows_purge
from tests.factories import AccountFactory, HostFactory, ProjectFactory, ResultFactory, TeamFactory

pytestmark = pytest.mark.django_db
DAYS = 90
LONG_AGO = timedelta(days=DAYS + 1)


@pytest.fixture
def rules_on(settings) -> None:
    settings.COBBLESTONE_PURGE_IDLE_HOSTS_DAYS = DAYS
    settings.COBBLESTONE_PURGE_IDLE_ACCOUNTS_DAYS = DAYS


@pytest.fixture
def project():
    return ProjectFactory()


def old_account(project, now: datetime, **fields) -> Account:
    account = AccountFactory(project=project, **fields)
    Account.objects.filter(pk=account.pk).update(create_time=now - LONG_AGO)
    return account


def quiet_host(account: Account, now: datetime, **fields) -> Host:
    return HostFactory(account=account, project=account.project, rpc_time=now - LONG_AGO, **fields)


def purge(project, now: datetime) -> int:
    return dead_rows_purge(project=project, now=now, limit=100)


def test_quiet_host_without_credit_is_removed(rules_on, project, now):
    host = quiet_host(old_account(project, now, total_credit=5), now)
    purge(project, now)
    assert not Host.objects.filter(pk=host.pk).exists()


def test_quiet_host_with_credit_stays(rules_on, project, now):
    host = quiet_host(old_account(project, now), now, total_credit=0.5)
    purge(project, now)
    assert Host.objects.filter(pk=host.pk).exists()


def test_host_in_contact_recently_stays(rules_on, project, now):
    host = HostFactory(account=old_account(project, now), rpc_time=now - timedelta(days=DAYS - 1))
    purge(project, now)
    assert Host.objects.filter(pk=host.pk).exists()


def test_host_named_by_a_result_stays(rules_on, project, now):
    host = quiet_host(old_account(project, now), now)
    ResultFactory(workunit__app__project=project, host=host)
    purge(project, now)
    assert Host.objects.filter(pk=host.pk).exists()


def test_unused_account_is_removed(rules_on, project, now):
    account = old_account(project, now)
    purge(project, now)
    assert not Account.objects.filter(pk=account.pk).exists()


def test_account_with_credit_stays(rules_on, project, now):
    account = old_account(project, now, total_credit=1)
    purge(project, now)
    assert Account.objects.filter(pk=account.pk).exists()


def test_account_with_a_host_stays(rules_on, project, now):
    account = old_account(project, now, total_credit=5)
    HostFactory(account=account, total_credit=1)
    Account.objects.filter(pk=account.pk).update(total_credit=0)
    purge(project, now)
    assert Account.objects.filter(pk=account.pk).exists()


def test_account_logged_in_recently_stays(rules_on, project, now):
    account = old_account(project, now, last_login_time=now - timedelta(days=DAYS - 1))
    purge(project, now)
    assert Account.objects.filter(pk=account.pk).exists()


def test_team_founder_stays(rules_on, project, now):
    founder = old_account(project, now)
    TeamFactory(project=project, founder=founder)
    purge(project, now)
    assert Account.objects.filter(pk=founder.pk).exists()


def test_job_submitter_stays(rules_on, project, now):
    submitter = old_account(project, now)
    UserSubmit.objects.create(account=submitter)
    purge(project, now)
    assert Account.objects.filter(pk=submitter.pk).exists()


def test_account_whose_quiet_host_goes_is_removed_with_it(rules_on, project, now):
    account = old_account(project, now)
    quiet_host(account, now)
    purge(project, now)
    assert not Account.objects.filter(pk=account.pk).exists()


def test_nothing_is_removed_while_the_settings_are_off(project, now):
    account = old_account(project, now)
    quiet_host(account, now)
    purge(project, now)
    assert (Account.objects.count(), Host.objects.count()) == (1, 1)


def test_removed_rows_are_listed_for_the_statistics_export(rules_on, project, now):
    account = old_account(project, now)
    host = quiet_host(account, now)
    purge(project, now)
    assert list(DeletedHost.objects.values_list("hostid", flat=True)) == [host.pk]
    assert list(DeletedAccount.objects.values_list("userid", flat=True)) == [account.pk]


def test_removed_rows_are_archived_without_secrets(rules_on, project, now):
    account = old_account(project, now)
    host = quiet_host(account, now)
    purge(project, now)
    day = f"{now.date():%Y-%m-%d}"
    with gzip.open(project.archive_dir / f"purged_hosts_{day}.jsonl.gz", "rt") as fh:
        hosts = [json.loads(line)["host"] for line in fh]
    with gzip.open(project.archive_dir / f"purged_accounts_{day}.jsonl.gz", "rt") as fh:
        accounts = [json.loads(line)["account"] for line in fh]
    assert [(h["id"], h["domain_name"]) for h in hosts] == [(host.pk, host.domain_name)]
    assert [(a["id"], a["email_addr"]) for a in accounts] == [(account.pk, account.email_addr)]
    assert "passwd_hash" not in accounts[0]
    assert "authenticator" not in accounts[0]


def test_db_purge_pass_runs_the_rules(rules_on, project, now):
    account = old_account(project, now)
    daemon_run("db_purge", slug=project.slug)
    assert not Account.objects.filter(pk=account.pk).exists()


def test_web_login_records_its_time(client, project, now):
    account = AccountFactory(project=project, password="secret-pw-1")
    response = client.post(
        f"/{project.slug}/account/", {"email": account.email_addr, "password": "secret-pw-1"}
    )
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.last_login_time is not None
