"""Preferences: the project and computing (global) preferences a volunteer sets on the web,
the location (venue) of each computer, and global preferences between the account and its
hosts (BOINC's handle_global_prefs).

For global preferences the newer copy wins, by ``<mod_time>``: a client whose preferences
are newer (set on the host, or brought from another project by the same volunteer) updates
the account's; an account whose preferences are newer (or a client that has none) has
them sent in the reply, and the client adopts them.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import replace
from datetime import datetime
from typing import Any

from apps.hosts.models import Host
from apps.protocol import ProtocolError, prefs_mod_time
from apps.protocol.global_prefs import GlobalPrefsDoc, parse_global_prefs, render_global_prefs
from apps.protocol.project_prefs import (
    GPU_PREF_TAGS,
    ProjectPrefs,
    ProjectPrefsDoc,
    parse_project_prefs,
    render_project_prefs,
)
from apps.scheduler.services.context import RpcContext
from apps.volunteers.models import Account
from apps.volunteers.services import VENUE_CHOICES, AccountEditError

logger = logging.getLogger(__name__)

# Accounts' stored preferences repeat from RPC to RPC: read each distinct text once.
_mod_time = functools.lru_cache(maxsize=4096)(prefs_mod_time)


def global_prefs_exchange(ctx: RpcContext) -> str | None:
    """Store the client's preferences if newer and its volunteer's own; return the
    account's (the body of ``<global_preferences>``) when the client should adopt them."""
    account, sent = ctx.account, ctx.req.global_prefs
    assert account is not None
    stored = account.global_prefs or ""
    if sent is not None and sent.raw == stored:
        return None  # the usual case once both sides agree: nothing to parse
    stored_time = _mod_time(stored) if stored else 0.0
    if stored_time is None:
        logger.warning("account %s: global preferences not used, not valid XML", account.id)
        stored, stored_time = "", 0.0
    # As BOINC, a modification time in the future counts as now.
    stored_time = min(stored_time, ctx.now_unix)
    sent_time = min(sent.mod_time, ctx.now_unix) if sent is not None else 0.0
    if sent is not None and sent.raw and sent_time > stored_time:
        # As BOINC: only prefs that came from this volunteer's account (the same e-mail
        # hash) are stored; the client's, from anywhere else, just win on that host.
        # Never with a weak key, which may change nothing of the account.
        if ctx.req.global_prefs_source_email_hash == account.email_hash and not ctx.weak_auth:
            Account.objects.filter(pk=account.pk).update(global_prefs=sent.raw)
            account.global_prefs = sent.raw
        return None
    if stored and (sent is None or stored_time > sent_time):
        return stored
    return None


def account_project_prefs_set(
    *,
    account: Account,
    no_cpu: bool | None = None,
    no_gpus: bool | None = None,
    allow_beta_work: bool | None = None,
    show_hosts: bool | None = None,
    stats_export_consent: bool | None = None,
) -> None:
    """Store the volunteer's project and privacy preferences that are given (None: unchanged),
    and only those columns: the scheduler and the validator write the same row's credit
    meanwhile, so a whole-row save could undo theirs."""
    given = {
        "no_cpu": no_cpu,
        "no_gpus": no_gpus,
        "allow_beta_work": allow_beta_work,
        "show_hosts": show_hosts,
        "stats_export_consent": stats_export_consent,
    }
    changes = {name: value for name, value in given.items() if value is not None}
    if not changes:
        return
    Account.objects.filter(pk=account.pk).update(**changes)
    for name, value in changes.items():
        setattr(account, name, value)


@functools.lru_cache(maxsize=4096)
def _parsed_project_prefs(text: str) -> ProjectPrefsDoc | None:
    try:
        return parse_project_prefs(text)
    except ProtocolError:
        return None


@functools.lru_cache(maxsize=8)
def _column_prefs(no_cpu: bool, no_gpus: bool, allow_beta_work: bool) -> ProjectPrefs:
    gpus: dict[str, Any] = dict.fromkeys(GPU_PREF_TAGS.values(), no_gpus)
    return ProjectPrefs(no_cpu=no_cpu, allow_beta_work=allow_beta_work, **gpus)


def account_project_prefs_get(account: Account) -> ProjectPrefsDoc:
    """The account's project preferences. The primary set's processor and beta switches are
    the account's columns (what the admin and older pages set); a GPU type refused alone
    is read from the stored preferences."""
    doc = _parsed_project_prefs(account.project_prefs) if account.project_prefs else None
    columns = _column_prefs(account.no_cpu, account.no_gpus, account.allow_beta_work)
    if doc is None:
        return ProjectPrefsDoc(primary=columns)
    primary = doc.primary
    gpus = {tag: getattr(primary, tag) for tag in GPU_PREF_TAGS.values()}
    if account.no_gpus or primary.no_gpus:
        gpus = dict.fromkeys(GPU_PREF_TAGS.values(), account.no_gpus)
    return replace(
        doc,
        primary=replace(primary, no_cpu=account.no_cpu, allow_beta_work=account.allow_beta_work, **gpus),
    )


def rpc_project_prefs(account: Account, venue: str) -> ProjectPrefs:
    """The set a host in ``venue`` runs by (BOINC's rule: the venue's own set if the
    account has one, else the primary). An account with no stored preferences parses nothing."""
    if not account.project_prefs:
        return _column_prefs(account.no_cpu, account.no_gpus, account.allow_beta_work)
    if _parsed_project_prefs(account.project_prefs) is None:
        logger.warning("account %s: project preferences not used, not valid XML", account.id)
    return account_project_prefs_get(account).for_venue(venue)


def account_project_prefs_save(*, account: Account, doc: ProjectPrefsDoc) -> None:
    """Store the project preferences as set on the web: the XML every host receives in its
    next reply, and the primary set's switches in the columns. Writes those columns only."""
    changes = {
        "project_prefs": render_project_prefs(doc),
        "no_cpu": doc.primary.no_cpu,
        "no_gpus": doc.primary.no_gpus,
        "allow_beta_work": doc.primary.allow_beta_work,
    }
    Account.objects.filter(pk=account.pk).update(**changes)
    for name, value in changes.items():
        setattr(account, name, value)


def account_global_prefs_get(account: Account) -> GlobalPrefsDoc:
    """The account's computing preferences; BOINC's defaults when it has none (or they are
    not XML: the web's next save replaces them)."""
    if not account.global_prefs:
        return GlobalPrefsDoc()
    try:
        return parse_global_prefs(account.global_prefs)
    except ProtocolError:
        logger.warning("account %s: stored global preferences are not XML; showing defaults", account.id)
        return GlobalPrefsDoc()


def account_global_prefs_set(*, account: Account, prefs: GlobalPrefsDoc, now: datetime) -> GlobalPrefsDoc:
    """Store the computing preferences as set on the web, stamped ``now``: newer than any
    client's copy, so every computer of the account adopts them at its next request
    (global_prefs_exchange). Writes that column only."""
    # Whole seconds, as BOINC writes mod_time; never behind the stored copy's time.
    stamped = replace(prefs, mod_time=float(max(int(now.timestamp()), int(prefs.mod_time))))
    body = render_global_prefs(stamped)
    Account.objects.filter(pk=account.pk).update(global_prefs=body)
    account.global_prefs = body
    return stamped


def host_venue_set(*, host: Host, venue: str) -> None:
    """The computer's location: it runs by that venue's computing preferences (the client
    learns it from the next reply's <host_venue>)."""
    if venue not in dict(VENUE_CHOICES):
        raise AccountEditError("Choose home, school, work or none.", field="venue")
    Host.objects.filter(pk=host.pk).update(venue=venue)
    host.venue = venue
