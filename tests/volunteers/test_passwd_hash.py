"""Stored password hashes: a salted slow hash of the client's md5, never the md5 itself."""

from __future__ import annotations

import hashlib

import pytest

from apps.volunteers.models import Account, make_passwd_hash, passwd_hash
from tests.factories import AccountFactory

pytestmark = [pytest.mark.django_db, pytest.mark.real_password_hasher]

EMAIL = "ada@example.org"
DIGEST = passwd_hash("correct horse", EMAIL)


def test_stored_hash_is_not_the_md5_the_client_sends():
    account = AccountFactory(email_addr=EMAIL, password="correct horse")
    assert DIGEST not in account.passwd_hash
    assert account.check_passwd_hash(DIGEST) is True


def test_the_same_password_is_stored_differently_each_time():
    assert make_passwd_hash(DIGEST) != make_passwd_hash(DIGEST)


def test_the_stored_hash_is_not_a_login():
    account = AccountFactory(email_addr=EMAIL, password="correct horse")
    assert account.check_passwd_hash(account.passwd_hash) is False


def test_a_wrong_password_does_not_check():
    account = AccountFactory(email_addr=EMAIL, password="correct horse")
    assert account.check_passwd_hash(passwd_hash("wrong horse", EMAIL)) is False


def test_the_md5_is_checked_regardless_of_case():
    account = AccountFactory(email_addr=EMAIL, password="correct horse")
    assert account.check_passwd_hash(DIGEST.upper()) is True


def test_the_account_key_hash_checks_too():
    account = AccountFactory(email_addr=EMAIL, password="correct horse")
    key_hash = hashlib.md5((account.authenticator + EMAIL).encode()).hexdigest()
    assert account.check_passwd_hash(key_hash) is True


def test_no_password_matches_an_account_made_without_one():
    account = AccountFactory(email_addr=EMAIL)
    assert account.check_passwd_hash(passwd_hash("", EMAIL)) is False
    assert account.check_passwd_hash(account.passwd_hash) is False


def test_a_legacy_md5_row_still_checks_and_is_rehashed():
    account = AccountFactory(email_addr=EMAIL, passwd_hash=DIGEST)
    assert account.check_passwd_hash(DIGEST) is True
    stored = Account.objects.get(pk=account.pk).passwd_hash
    assert DIGEST not in stored
    assert Account.objects.get(pk=account.pk).check_passwd_hash(DIGEST) is True


def test_a_legacy_md5_row_is_kept_when_the_password_is_wrong():
    account = AccountFactory(email_addr=EMAIL, passwd_hash=DIGEST)
    assert account.check_passwd_hash(passwd_hash("wrong horse", EMAIL)) is False
    assert Account.objects.get(pk=account.pk).passwd_hash == DIGEST


def test_set_password_stores_a_salted_hash():
    account = AccountFactory(email_addr=EMAIL)
    account.set_password("correct horse")
    account.save()
    account = Account.objects.get(pk=account.pk)
    assert DIGEST not in account.passwd_hash
    assert account.check_passwd_hash(DIGEST) is True


@pytest.mark.parametrize("candidate", ["é" * 32, "é", "", "x" * 5000])
def test_a_malformed_hash_does_not_check(candidate):
    account = AccountFactory(email_addr=EMAIL, passwd_hash=DIGEST)
    assert account.check_passwd_hash(candidate) is False


def test_passwords_are_stored_with_bcrypt_at_boincs_cost():
    stored = make_passwd_hash(passwd_hash("secret-pw", "ada@example.org"))
    assert stored.startswith("bcrypt_sha256$$2b$10$")
