"""The account RPCs and pages store a salted hash of the client's md5 and never take the
stored value as a login (security review: unsalted md5 that worked as a password)."""

from __future__ import annotations

import pytest

from apps.protocol import parse_account_reply
from apps.volunteers.models import Account, passwd_hash
from tests.factories import AccountFactory

pytestmark = [pytest.mark.django_db, pytest.mark.real_password_hasher]

EMAIL = "new@example.org"
DIGEST = passwd_hash("longenough", EMAIL)


def account_rpc(client, project, page: str, query: str):
    response = client.get(f"/{project.slug}/{page}?{query}")
    assert response.status_code == 200
    return parse_account_reply(response.content)


def create(client, project, digest: str = DIGEST):
    return account_rpc(
        client, project, "create_account.php", f"email_addr={EMAIL}&passwd_hash={digest}&user_name=Newbie"
    )


def lookup(client, project, digest: str):
    return account_rpc(client, project, "lookup_account.php", f"email_addr={EMAIL}&passwd_hash={digest}")


def test_create_account_does_not_store_the_md5(client, project):
    create(client, project)
    assert DIGEST not in Account.objects.get(project=project).passwd_hash


def test_lookup_with_the_clients_md5_after_create_gives_the_key(client, project):
    created = create(client, project)
    assert lookup(client, project, DIGEST).authenticator == created.authenticator


def test_lookup_with_the_stored_value_is_a_bad_password(client, project):
    create(client, project)
    stored = Account.objects.get(project=project).passwd_hash
    reply = account_rpc(
        client, project, "lookup_account.php", f"email_addr={EMAIL}&passwd_hash={stored.replace('$', '%24')}"
    )
    assert (reply.authenticator, reply.error_num) == (None, -206)


def test_create_account_with_the_stored_value_gives_no_key(client, project):
    create(client, project)
    stored = Account.objects.get(project=project).passwd_hash
    reply = create(client, project, digest=stored.replace("$", "%24"))
    assert reply.authenticator is None


def test_lookup_of_a_legacy_md5_row_gives_the_key_and_rehashes_it(client, project):
    account = AccountFactory(project=project, email_addr=EMAIL, passwd_hash=DIGEST)
    assert lookup(client, project, DIGEST).authenticator == account.authenticator
    account.refresh_from_db()
    assert DIGEST not in account.passwd_hash
    assert lookup(client, project, DIGEST).authenticator == account.authenticator


def test_a_passwordless_account_gets_a_salted_key_hash(client, project):
    account = AccountFactory(project=project, email_addr=EMAIL, passwd_hash="")
    key_hash = passwd_hash(account.authenticator, EMAIL)
    assert lookup(client, project, key_hash).authenticator == account.authenticator
    account.refresh_from_db()
    assert account.passwd_hash != ""
    assert key_hash not in account.passwd_hash


def test_lookup_with_a_non_ascii_hash_is_a_bad_password(client, project):
    AccountFactory(project=project, email_addr=EMAIL, passwd_hash=DIGEST)
    assert lookup(client, project, "%C3%A9" * 32).error_num == -206


def test_signup_page_does_not_store_the_md5(client, project):
    client.post(f"/{project.slug}/signup/", {"name": "Ada", "email": EMAIL, "password": "longenough"})
    assert DIGEST not in Account.objects.get(project=project).passwd_hash


def test_login_page_accepts_a_legacy_md5_row(client, project):
    account = AccountFactory(project=project, email_addr=EMAIL, passwd_hash=DIGEST)
    client.post(f"/{project.slug}/account/", {"email": EMAIL, "password": "longenough"})
    assert account.authenticator in client.get(f"/{project.slug}/account/").content.decode()
