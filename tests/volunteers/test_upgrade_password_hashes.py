"""upgrade_password_hashes: accounts that still store the bare md5 the client sends get a
salted hash of it, without their volunteers logging in."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.hashers import check_password
from django.core.management import CommandError, call_command

from apps.protocol import parse_account_reply
from apps.volunteers.models import Account, make_passwd_hash, passwd_hash
from apps.volunteers.services import passwords as volunteer_services
from tests.factories import AccountFactory, ProjectFactory

pytestmark = pytest.mark.django_db

EMAIL = "ada@example.org"
PASSWORD = "correct horse"
DIGEST = passwd_hash(PASSWORD, EMAIL)


def upgrade(*args: str) -> dict[str, str]:
    """Run the command; its summary table as {column: value}."""
    out = StringIO()
    call_command("upgrade_password_hashes", *args, stdout=out)
    header, values = out.getvalue().splitlines()[:2]
    return dict(zip(header.split(), values.split(), strict=True))


def legacy_account(email: str = EMAIL, **fields: object) -> Account:
    return AccountFactory(email_addr=email, passwd_hash=passwd_hash(PASSWORD, email), **fields)


def stored(account: Account) -> str:
    return Account.objects.get(pk=account.pk).passwd_hash


def test_legacy_md5_rows_are_replaced_by_a_salted_hash_of_the_md5():
    accounts = [legacy_account(f"v{i}@example.org") for i in range(3)]
    assert upgrade()["upgraded"] == "3"
    for account in accounts:
        assert stored(account) != account.passwd_hash
        assert check_password(account.passwd_hash, stored(account)) is True


def test_a_legacy_row_in_upper_case_is_upgraded_too():
    account = AccountFactory(email_addr=EMAIL, passwd_hash=DIGEST.upper())
    upgrade()
    assert check_password(DIGEST, stored(account)) is True


def test_already_hashed_rows_are_left_alone():
    account = AccountFactory(email_addr=EMAIL, password=PASSWORD)
    passwordless = AccountFactory(passwd_hash="")
    summary = upgrade()
    assert (summary["examined"], summary["upgraded"]) == ("0", "0")
    assert (stored(account), stored(passwordless)) == (account.passwd_hash, "")


def test_dry_run_counts_and_writes_nothing():
    accounts = [legacy_account(f"v{i}@example.org") for i in range(3)]
    summary = upgrade("--dry-run", "--batch-size", "2")
    assert (summary["examined"], summary["upgraded"]) == ("3", "0")
    assert [stored(a) for a in accounts] == [a.passwd_hash for a in accounts]


def test_every_batch_is_upgraded():
    accounts = [legacy_account(f"v{i}@example.org") for i in range(5)]
    assert upgrade("--batch-size", "2")["upgraded"] == "5"
    assert all(stored(a) != a.passwd_hash for a in accounts)


def test_limit_upgrades_at_most_that_many_accounts():
    accounts = [legacy_account(f"v{i}@example.org") for i in range(3)]
    assert upgrade("--limit", "2")["upgraded"] == "2"
    assert stored(accounts[2]) == accounts[2].passwd_hash


def test_a_second_run_upgrades_nothing():
    legacy_account()
    upgrade()
    summary = upgrade()
    assert (summary["examined"], summary["upgraded"]) == ("0", "0")


def test_a_row_changed_between_select_and_update_is_not_overwritten(monkeypatch):
    account = legacy_account()
    changed = make_passwd_hash(passwd_hash("a new password", EMAIL))

    def log_in_meanwhile(digest: str) -> str:
        # A password change lands while the batch is being hashed.
        Account.objects.filter(pk=account.pk).update(passwd_hash=changed)
        return make_passwd_hash(digest)

    monkeypatch.setattr(volunteer_services, "make_passwd_hash", log_in_meanwhile)
    summary = upgrade()
    assert (summary["upgraded"], summary["skipped"]) == ("0", "1")
    assert stored(account) == changed


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(CommandError, match="--batch-size must be at least 1"):
        call_command("upgrade_password_hashes", "--batch-size", "0")


def test_web_login_with_the_password_works_after_the_upgrade(client):
    account = legacy_account(project=ProjectFactory())
    upgrade()
    response = client.post(f"/{account.project.slug}/account/", {"email": EMAIL, "password": PASSWORD})
    assert response.status_code == 302
    assert account.authenticator in client.get(response["Location"]).content.decode()


def lookup_account(client, account: Account, digest: str):
    query = f"email_addr={EMAIL}&passwd_hash={digest.replace('$', '%24')}"
    return parse_account_reply(client.get(f"/{account.project.slug}/lookup_account.php?{query}").content)


def test_lookup_account_with_the_clients_md5_works_after_the_upgrade(client):
    account = legacy_account(project=ProjectFactory())
    upgrade()
    assert lookup_account(client, account, DIGEST).authenticator == account.authenticator


@pytest.mark.real_password_hasher
def test_the_stored_value_is_no_login_after_the_upgrade(client):
    account = legacy_account(project=ProjectFactory())
    upgrade()
    bcrypt = stored(account)
    assert bcrypt.startswith("bcrypt_sha256$")
    reply = lookup_account(client, account, bcrypt)
    assert (reply.authenticator, reply.error_num) == (None, -206)
