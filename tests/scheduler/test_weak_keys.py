"""The scheduler accepts an account's weak key (<id>_<md5>) to attach a computer and fetch work."""

import hashlib

import pytest

from apps.hosts.models import Host
from apps.protocol import GlobalPrefs
from apps.volunteers.models import Account, make_passwd_hash, passwd_hash
from apps.volunteers.services import account_password_set
from apps.volunteers.services.weak_keys import account_weak_key
from tests.scheduler.conftest import make_jobs, make_request, rpc

pytestmark = pytest.mark.django_db


@pytest.fixture
def weak(account) -> str:
    account.passwd_hash = make_passwd_hash(passwd_hash("secret-pass", account.email_addr))
    account.save(update_fields=["passwd_hash"])
    return account_weak_key(account)


def test_weak_key_is_the_id_and_md5_of_key_and_stored_hash(account, weak):
    digest = hashlib.md5((account.authenticator + account.passwd_hash).encode()).hexdigest()
    assert weak == f"{account.pk}_{digest}"


def test_a_host_attached_with_the_weak_key_gets_work(client, project, account, cpu_app, weak):
    make_jobs(project, cpu_app, 2)
    reply = rpc(client, project, make_request(weak))
    assert len(reply.results) == 1
    assert reply.userid == account.pk
    assert Host.objects.get(pk=reply.hostid).account == account


def test_a_known_host_keeps_fetching_work_with_the_weak_key(client, project, account, cpu_app, weak):
    make_jobs(project, cpu_app, 2)
    first = rpc(client, project, make_request(weak))
    second = rpc(client, project, make_request(weak, hostid=first.hostid, rpc_seqno=1))
    assert second.hostid is None
    assert len(second.results) == 1
    assert Host.objects.count() == 1


def test_a_wrong_weak_key_is_refused(client, project, account, weak):
    reply = rpc(client, project, make_request(f"{account.pk}_{'0' * 32}"))
    assert reply.userid is None
    assert any("Invalid or missing account key" in m.text for m in reply.messages)
    assert not Host.objects.exists()


def test_another_accounts_id_with_this_digest_is_refused(client, project, account, weak):
    other = Account.objects.create(project=project, name="Other", email_addr="o@example.com", passwd_hash="x")
    digest = weak.split("_", 1)[1]
    reply = rpc(client, project, make_request(f"{other.pk}_{digest}"))
    assert reply.userid is None


def test_the_weak_key_stops_working_when_the_password_changes(client, project, account, weak):
    account_password_set(account=account, password="another-pass")
    reply = rpc(client, project, make_request(weak))
    assert reply.userid is None
    assert rpc(client, project, make_request(account_weak_key(account))).userid == account.pk


def test_a_weak_key_does_not_store_the_clients_preferences(client, project, account, weak):
    account.global_prefs = "<mod_time>200</mod_time><max_ncpus_pct>50</max_ncpus_pct>"
    account.save(update_fields=["global_prefs"])
    sent = GlobalPrefs(raw="<mod_time>300</mod_time><max_ncpus_pct>25</max_ncpus_pct>", mod_time=300)
    rpc(
        client,
        project,
        make_request(weak, global_prefs=sent, global_prefs_source_email_hash=account.email_hash),
    )
    assert "50" in Account.objects.get(pk=account.pk).global_prefs
