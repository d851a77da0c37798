"""Global preferences between the account and the client: the newer copy wins (BOINC)."""

import pytest

from apps.protocol import GlobalPrefs
from apps.volunteers.models import Account
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db

STORED = "<mod_time>200</mod_time><max_ncpus_pct>50</max_ncpus_pct>"


def client_prefs(mod_time: float) -> GlobalPrefs:
    return GlobalPrefs(
        raw=f"<mod_time>{mod_time:g}</mod_time><max_ncpus_pct>25</max_ncpus_pct>", mod_time=mod_time
    )


@pytest.fixture
def stored(account):
    account.global_prefs = STORED
    account.save(update_fields=["global_prefs"])
    return account


def test_a_client_without_preferences_is_sent_the_accounts(client, project, stored):
    reply = rpc(client, project, make_request(stored.authenticator))
    assert "<max_ncpus_pct>50</max_ncpus_pct>" in reply.global_preferences


def test_a_client_with_older_preferences_is_sent_the_accounts(client, project, stored):
    reply = rpc(client, project, make_request(stored.authenticator, global_prefs=client_prefs(100)))
    assert "<max_ncpus_pct>50</max_ncpus_pct>" in reply.global_preferences


def test_newer_preferences_from_the_client_replace_the_accounts(client, project, stored):
    request = make_request(
        stored.authenticator, global_prefs=client_prefs(300), global_prefs_source_email_hash=stored.email_hash
    )
    assert rpc(client, project, request).global_preferences is None
    assert Account.objects.get(pk=stored.pk).global_prefs == client_prefs(300).raw


def test_newer_preferences_of_unknown_origin_are_not_stored(client, project, stored):
    reply = rpc(client, project, make_request(stored.authenticator, global_prefs=client_prefs(300)))
    assert reply.global_preferences is None
    assert Account.objects.get(pk=stored.pk).global_prefs == STORED


def test_an_account_without_preferences_sends_none(client, project, account):
    assert rpc(client, project, make_request(account.authenticator)).global_preferences is None


def test_preferences_of_the_same_time_are_neither_sent_nor_stored(client, project, stored):
    same_time = GlobalPrefs(raw="<mod_time>200</mod_time><max_ncpus_pct>10</max_ncpus_pct>", mod_time=200)
    request = make_request(
        stored.authenticator, global_prefs=same_time, global_prefs_source_email_hash=stored.email_hash
    )
    assert rpc(client, project, request).global_preferences is None
    assert Account.objects.get(pk=stored.pk).global_prefs == STORED


def test_a_new_computer_starts_in_the_accounts_default_venue(client, project, account):
    account.venue = "school"
    account.save(update_fields=["venue"])
    assert rpc(client, project, make_request(account.authenticator)).host_venue == "school"
