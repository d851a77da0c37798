"""Volunteer services: account edits, teams, and the batch upgrade of legacy password rows."""

from apps.volunteers.services.accounts import (
    VENUE_CHOICES,
    AccountEditError,
    account_email_change,
    account_info_update,
    account_password_matches,
    account_password_set,
    account_venue_set,
)
from apps.volunteers.services.passwords import (
    PasswdHashUpgrade,
    account_passwd_hash_upgrade_batch,
    account_passwd_hashes_upgrade,
)
from apps.volunteers.services.teams import (
    TeamError,
    TeamFields,
    team_create,
    team_founder_change,
    team_founder_decline,
    team_founder_request,
    team_founder_takeover,
    team_join,
    team_joinable_named,
    team_quit,
    team_update,
)

__all__ = [
    "VENUE_CHOICES",
    "AccountEditError",
    "PasswdHashUpgrade",
    "TeamError",
    "TeamFields",
    "account_email_change",
    "account_info_update",
    "account_passwd_hash_upgrade_batch",
    "account_passwd_hashes_upgrade",
    "account_password_matches",
    "account_password_set",
    "account_venue_set",
    "team_create",
    "team_founder_change",
    "team_founder_decline",
    "team_founder_request",
    "team_founder_takeover",
    "team_join",
    "team_joinable_named",
    "team_quit",
    "team_update",
]
