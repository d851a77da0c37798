"""BOINC's user and team rows as Cobblestone accounts and teams."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from apps.boinc_import.domain.ids import IdMap
from apps.boinc_import.domain.values import (
    Mapped,
    Row,
    RowRefused,
    average_time,
    described,
    flag,
    integer,
    number,
    text,
    unix_time,
)
from apps.protocol import ProtocolError, parse_project_prefs_switches, xml_fragment_problem

MD5_HEX = re.compile(r"[0-9a-fA-F]{32}")
# PHP's password_hash() (BOINC's web code since 2018 stores password_hash(md5)): bcrypt.
PHP_BCRYPT = re.compile(r"\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}")
TEAM_TYPES = range(1, 8)  # Cobblestone's Team.TeamType; BOINC added 8-12 later
CLUB = 1

Check = Callable[[str], "str | None"]


@dataclass(frozen=True, slots=True)
class AccountRules:
    """Cobblestone's own checks, given by the caller: each answers why a value is refused,
    or None (the name rule of create_account.php, Django's email and URL validators)."""

    name_problem: Check
    email_problem: Check
    url_problem: Check


def stored_passwd_hash(value: str) -> tuple[str, str | None]:
    """BOINC's user.passwd_hash as Cobblestone stores it, and a note if it could not be kept.

    The bare md5(password + lower(email)) of older servers is kept as it is: log-in accepts
    it and re-hashes it (Account.check_passwd_hash), and upgrade_password_hashes re-hashes the
    rest. PHP's bcrypt of that md5 becomes Django's ``bcrypt$`` form of the same hash, which
    Django's BCryptPasswordHasher checks and the log-in then upgrades.
    """
    value = value.strip()
    if MD5_HEX.fullmatch(value):
        return value.lower(), None
    if PHP_BCRYPT.fullmatch(value):
        return f"bcrypt${value}", None
    if not value:
        return "", "no password hash: the volunteer logs in with the account key until setting one"
    return "", "password hash in an unknown format dropped: the volunteer logs in with the account key"


def map_team(row: Row, *, now: float, rules: AccountRules) -> Mapped:
    """A team row (its founder is set once the users are in: see founder_of)."""
    notes: list[str] = []
    team_type = integer(row, "type", lo=0, hi=10**6)
    if team_type not in TEAM_TYPES:
        notes.append(f"team type {team_type} is not one of Cobblestone's (1-7); stored as 1")
        team_type = CLUB
    values = {
        "name": text(row, "name", max_len=200, required=True),
        "type": team_type,
        "url": _url(row, rules, notes),
        "description": described(row, "description", max_len=10**6, notes=notes),
        "country": described(row, "country", max_len=100, notes=notes),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        **_credit(row, now),
    }
    return Mapped(values, notes)


def map_user(row: Row, *, now: float, rules: AccountRules, teams: IdMap, stats_consent: bool) -> Mapped:
    """A user row as an account of the imported project."""
    notes: list[str] = []
    name = text(row, "name", max_len=200, required=True)
    problem = rules.name_problem(name)
    if problem:
        raise RowRefused(f"name {name!r}: {problem}")
    email = text(row, "email_addr", max_len=254, required=True)
    problem = rules.email_problem(email)
    if problem:
        raise RowRefused(f"email_addr {email!r}: {problem}")
    authenticator = text(row, "authenticator", max_len=64, required=True)
    passwd, note = stored_passwd_hash(text(row, "passwd_hash", max_len=254))
    if note:
        notes.append(note)
    team_id = None
    teamid = integer(row, "teamid", lo=0)
    if teamid:
        team_id = teams.target(teamid)
        if team_id is None:
            notes.append(f"team {teamid} was not imported: the volunteer is in no team")
    project_prefs = _prefs(row, "project_prefs", notes)
    switches = _switches(project_prefs, notes)
    values = {
        "name": name,
        "email_addr": email,
        "passwd_hash": passwd,
        "authenticator": authenticator,
        "cross_project_id": text(row, "cross_project_id", max_len=32, required=True),
        "create_time": unix_time(row, "create_time", now=now, required=True),
        "team_id": team_id,
        "country": described(row, "country", max_len=100, notes=notes),
        "url": _url(row, rules, notes),
        "show_hosts": flag(row, "show_hosts"),
        "stats_export_consent": stats_consent,
        "project_prefs": project_prefs,
        "global_prefs": _prefs(row, "global_prefs", notes),
        "no_cpu": switches[0],
        "no_gpus": switches[1],
        "allow_beta_work": switches[2],
        **_credit(row, now),
    }
    return Mapped(values, notes)


def _credit(row: Row, now: float) -> dict[str, float]:
    return {
        "total_credit": number(row, "total_credit"),
        "expavg_credit": number(row, "expavg_credit"),
        "expavg_time": average_time(row, "expavg_time", now=now),
    }


def _url(row: Row, rules: AccountRules, notes: list[str]) -> str:
    """A web address; BOINC stores what volunteers typed, often without http://."""
    url = described(row, "url", max_len=10**6, notes=[]).strip()
    if not url:
        return ""
    if "://" not in url:
        url = f"http://{url}"
    if len(url) > 200 or rules.url_problem(url):
        notes.append(f"url {url[:80]!r} is not a valid web address of at most 200 characters; dropped")
        return ""
    return url


def _prefs(row: Row, column: str, notes: list[str]) -> str:
    """Stored preferences go to the client as XML: text that is not XML is dropped."""
    body = described(row, column, max_len=10**7, notes=notes).strip()
    if body:
        problem = xml_fragment_problem(body)
        if problem:
            notes.append(f"{column} are not valid XML ({problem}); dropped")
            return ""
    return body


def _switches(project_prefs: str, notes: list[str]) -> tuple[bool, bool, bool]:
    """(no_cpu, no_gpus, allow_beta_work) from BOINC's project preferences."""
    try:
        switches = parse_project_prefs_switches(project_prefs)
    except ProtocolError:
        return False, False, False  # not <project_preferences>: BOINC reads no switches either
    if switches.some_gpus_only:
        notes.append("project preferences refuse some GPU types only; Cobblestone uses every GPU type")
    return switches.no_cpu, switches.no_gpus, switches.allow_beta_work


def stats_consent(*, consent_enforced: bool, latest_flag: int | None) -> bool:
    """Whether the volunteer's credit is exported to statistics sites: BOINC's db_dump asks
    for the latest STATSEXPORT consent only when that consent type is enabled."""
    if not consent_enforced:
        return True
    return bool(latest_flag)
