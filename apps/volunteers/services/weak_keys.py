"""Weak account keys of accounts (apps.volunteers.domain.weak_keys)."""

from __future__ import annotations

from apps.volunteers.domain.weak_keys import weak_key, weak_key_matches
from apps.volunteers.models import Account


def account_weak_key(account: Account) -> str:
    """The key that attaches computers to ``account`` and does nothing else."""
    return weak_key(userid=account.pk, authenticator=account.authenticator, passwd_hash=account.passwd_hash)


def account_weak_key_matches(account: Account, key: str) -> bool:
    return weak_key_matches(
        key, userid=account.pk, authenticator=account.authenticator, passwd_hash=account.passwd_hash
    )
