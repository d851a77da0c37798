"""Account edits keep BOINC's log-in working: the client sends md5(password + lower(email))."""

from __future__ import annotations

import pytest

from apps.protocol import WebRpcError
from apps.volunteers.models import Account, passwd_hash
from apps.volunteers.services import (
    AccountEditError,
    AccountRpcError,
    account_email_change,
    account_info_update,
    account_lookup,
    account_password_set,
    account_venue_set,
)
from tests.factories import AccountFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(db):
    return AccountFactory(email_addr="ada@example.com", password="first-secret", total_credit=12.0)


def client_lookup(account: Account, email: str, password: str) -> Account | None:
    """What lookup_account.php answers the BOINC client (boinccmd --lookup_account)."""
    return account_lookup(project=account.project, email_addr=email, passwd_hash=passwd_hash(password, email))


def test_after_an_email_change_the_client_logs_in_with_the_new_address(account):
    account_email_change(account=account, password="first-secret", new_email="Ada@New.example.org")
    assert client_lookup(account, "ada@new.example.org", "first-secret").pk == account.pk


def test_after_an_email_change_the_old_address_no_longer_logs_in(account):
    account_email_change(account=account, password="first-secret", new_email="ada@new.example.org")
    with pytest.raises(AccountRpcError) as exc:
        client_lookup(account, "ada@example.com", "first-secret")
    assert exc.value.error_num == WebRpcError.NOT_FOUND


def test_an_email_change_needs_the_password(account):
    with pytest.raises(AccountEditError, match="Wrong password"):
        account_email_change(account=account, password="guess", new_email="ada@new.example.org")
    assert Account.objects.get(pk=account.pk).email_addr == "ada@example.com"


def test_an_address_of_another_account_is_refused(account):
    AccountFactory(project=account.project, email_addr="grace@example.com")
    with pytest.raises(AccountEditError, match="Another account"):
        account_email_change(account=account, password="first-secret", new_email="GRACE@example.com")


def test_the_account_key_hash_follows_the_new_address(account):
    account_email_change(account=account, password="first-secret", new_email="ada@new.example.org")
    key_hash = passwd_hash(account.authenticator, "ada@new.example.org")
    assert account_lookup(project=account.project, email_addr="ada@new.example.org", passwd_hash=key_hash)


def test_a_new_password_logs_the_client_in_and_the_old_one_no_longer(account):
    account_password_set(account=account, password="second-secret")
    assert client_lookup(account, "ada@example.com", "second-secret").pk == account.pk
    with pytest.raises(AccountRpcError) as exc:
        client_lookup(account, "ada@example.com", "first-secret")
    assert exc.value.error_num == WebRpcError.BAD_PASSWD


def test_edits_leave_the_credit_the_validator_wrote_meanwhile(account):
    Account.objects.filter(pk=account.pk).update(total_credit=99.0)  # account is stale now
    account_info_update(account=account, name="Ada L.", country="United Kingdom", url="https://ada.example")
    account_password_set(account=account, password="second-secret")
    row = Account.objects.get(pk=account.pk)
    assert (row.name, row.total_credit) == ("Ada L.", 99.0)


def test_an_unknown_default_venue_is_refused(account):
    with pytest.raises(AccountEditError):
        account_venue_set(account=account, venue="garage")
