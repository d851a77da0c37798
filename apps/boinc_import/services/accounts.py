"""Teams, users (accounts), team founders, per-app credit and deleted-user records."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from apps.boinc_import.domain import (
    AccountRules,
    IdMap,
    Mapped,
    Row,
    map_app_credit,
    map_deleted,
    map_team,
    map_user,
    stats_consent,
)
from apps.boinc_import.queries import rows_insert, team_founders_set
from apps.boinc_import.services.engine import ImportRun, KeyedTable, project_rows, table_import
from apps.boinc_import.services.source import TableQuery
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.hosts.models import DeletedHost
from apps.volunteers.models import Account, DeletedAccount, Team
from apps.volunteers.services import email_is_valid, user_name_problem

TEAM_COLUMNS = (
    "id, create_time, userid, name, url, type, description, country, total_credit, expavg_credit, expavg_time"
)
USER_COLUMNS = (
    "u.id, u.create_time, u.email_addr, u.name, u.authenticator, u.country, u.total_credit, u.expavg_credit,"
    " u.expavg_time, u.global_prefs, u.project_prefs, u.teamid, u.url, u.show_hosts, u.cross_project_id,"
    " u.passwd_hash"
)
CREDIT_COLUMNS = "appid, njobs, total, expavg, expavg_time, credit_type"
_URL = URLValidator(schemes=["http", "https"])


def _url_problem(url: str) -> str | None:
    try:
        _URL(url)
    except ValidationError as exc:
        return " ".join(exc.messages)
    return None


RULES = AccountRules(
    name_problem=user_name_problem,
    email_problem=lambda email: None if email_is_valid(email) else "not a valid email address",
    url_problem=_url_problem,
)


def teams_import(run: ImportRun) -> None:
    def write(rows: list[tuple[Row, Mapped]]) -> None:
        # Founders are users, imported next: team_founders_import sets them.
        rows_insert(Team, [{**values, "founder_id": None} for values in project_rows(run, rows, run.teams)])

    table_import(
        run,
        KeyedTable(
            table="team",
            query=TableQuery(select=TEAM_COLUMNS, from_="team", key="id"),
            map_row=lambda row: map_team(row, now=run.now_unix, rules=RULES),
            write=write,
            model=Team,
            ids=run.teams,
        ),
    )


def users_import(run: ImportRun) -> None:
    """Users, with the latest STATSEXPORT consent when BOINC asks for that consent."""
    consent_type = run.source.rows("SELECT id, enabled FROM consent_type WHERE shortname = 'STATSEXPORT'")
    enforced = bool(consent_type and consent_type[0]["enabled"])
    consent_select = (
        ", (SELECT c.consent_flag FROM consent c WHERE c.userid = u.id AND c.consent_type_id = "
        f"{int(consent_type[0]['id'])} ORDER BY c.consent_time DESC, c.id DESC LIMIT 1) AS stats_consent"
        if enforced
        else ", NULL AS stats_consent"
    )

    def map_row(row: Row) -> Mapped:
        consent = stats_consent(consent_enforced=enforced, latest_flag=row["stats_consent"])
        return map_user(row, now=run.now_unix, rules=RULES, teams=run.teams, stats_consent=consent)

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(
            Account,
            project_rows(run, rows, run.users),
        )

    table_import(
        run,
        KeyedTable(
            table="user",
            query=TableQuery(select=USER_COLUMNS + consent_select, from_="user u", key="u.id"),
            map_row=map_row,
            write=write,
            model=Account,
            ids=run.users,
            check=lambda rows: _taken_authenticators(run, rows),
        ),
    )


def _taken_authenticators(run: ImportRun, rows: list[tuple[Row, Mapped]]) -> dict[int, str]:
    """Account keys are unique across the portal: one another project's account already
    has cannot be imported (its volunteer would log in to the wrong account)."""
    keys = {m.values["authenticator"]: row["id"] for row, m in rows}
    taken = Account.objects.filter(authenticator__in=list(keys))
    if run.project.pk is not None:
        taken = taken.exclude(project=run.project)
    return {
        keys[key]: "its authenticator is already the account key of an account of another project"
        for key in taken.values_list("authenticator", flat=True)
    }


def team_founders_import(run: ImportRun) -> None:
    """Each imported team's founder, once the users are in (a team founded by a user who
    was not imported has none, as when BOINC's founder leaves)."""
    rows = run.source.rows("SELECT id, userid FROM team ORDER BY id")
    open_teams = (
        set(Team.objects.filter(project=run.project, founder__isnull=True).values_list("id", flat=True))
        if run.project.pk is not None
        else {run.teams.target(row["id"]) for row in rows}
    )
    pairs = []
    for row in rows:
        team_id, founder = run.teams.target(row["id"]), run.users.target(row["userid"])
        if team_id in open_teams and founder is not None:
            pairs.append((founder, team_id))
    if not run.dry_run:
        team_founders_set(pairs)
    stats = run.table_stats("team founder")
    stats.read, stats.imported = len(rows), len(pairs)
    run.progress("team founder", len(rows), len(rows))


def app_credit_import(run: ImportRun, *, table: str) -> None:
    """credit_user or credit_team: per-app credit of users or of teams (FLOPS credit only)."""
    owner = "userid" if table == "credit_user" else "teamid"
    owners = run.users if owner == "userid" else run.teams
    model = UserAppCredit if owner == "userid" else TeamAppCredit

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(model, [m.values for _, m in rows])

    table_import(
        run,
        KeyedTable(
            table=table,
            query=TableQuery(
                select=f"{owner}, {CREDIT_COLUMNS}",
                from_=table,
                key=owner,
                key_alias=owner,
                key2="appid",
                where="credit_type = 0",
            ),
            map_row=lambda row: map_app_credit(
                row, owner=owner, owners=owners, apps=run.apps, now=run.now_unix
            ),
            write=write,
        ),
    )


def deleted_users_import(run: ImportRun) -> None:
    deleted_import(run, table="user_deleted", key="userid", model=DeletedAccount, ids=run.users)


def deleted_import(
    run: ImportRun, *, table: str, key: str, model: type[DeletedAccount | DeletedHost], ids: IdMap
) -> None:
    """user_deleted or host_deleted: what was deleted before the move, under its (shifted) id."""

    def write(rows: list[tuple[Row, Mapped]]) -> None:
        rows_insert(model, [{**m.values, "project_id": run.project.pk} for _, m in rows])

    table_import(
        run,
        KeyedTable(
            table=table,
            query=TableQuery(
                select=f"{key}, public_cross_project_id, create_time", from_=table, key=key, key_alias=key
            ),
            map_row=lambda row: map_deleted(row, key=key, offset=ids.offset, now=run.now_unix),
            write=write,
        ),
    )
