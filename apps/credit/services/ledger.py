"""Credit on the volunteers' side of a grant: accounts, their teams, per-app credit and the
day's credit history, read once and written once per batch of grants."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

from django.db.models import Model

from apps.applications.models import App, AppVersion
from apps.core.db import ModelColumns, update_rows
from apps.credit.domain.rac import update_rac
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.credit.queries import app_credit_rows, history_rows, locked_rows
from apps.hosts.models import Host
from apps.volunteers.models import Account, CreditHistory, Team

# What credit reads and writes of the wide host, account and team rows (the rest is deferred).
CREDIT_FIELDS = ["total_credit", "expavg_credit", "expavg_time"]
_ACCOUNT = ModelColumns(Account, "t", ["id", "project", "team", *CREDIT_FIELDS])
_TEAM = ModelColumns(Team, "t", ["id", "project", *CREDIT_FIELDS])
_APP_CREDIT_FIELDS = ["njobs", "total", "expavg", "expavg_time"]
_USER_APP = ModelColumns(UserAppCredit, "c")
_TEAM_APP = ModelColumns(TeamAppCredit, "c")
_HISTORY = ModelColumns(CreditHistory, "h")


def add_credit(row: Host | Account | Team | AppVersion | Model, amount: float, now: float) -> None:
    """total += amount (where the row has one) and BOINC's recent average credit."""
    if hasattr(row, "total_credit"):
        row.total_credit += amount
    row.expavg_credit, row.expavg_time = update_rac(row.expavg_credit, row.expavg_time, amount, now)  # type: ignore[union-attr]  # any model with the credit columns


def _add_app_credit(row: UserAppCredit | TeamAppCredit, amount: float, now: float, job: bool) -> None:
    row.njobs += int(job)
    row.total += amount
    row.expavg, row.expavg_time = update_rac(row.expavg, row.expavg_time, amount, now)


@dataclass(slots=True)
class Ledger:
    """The accounts of a batch's jobs, their teams and per-app rows, locked, credited in
    memory grant by grant (each addition in the order a call per grant made it), then written."""

    day: date
    accounts: dict[int, Model]
    teams: dict[int, Model]
    user_app: dict[int, UserAppCredit]
    team_app: dict[int, TeamAppCredit]

    @classmethod
    def load(cls, app: App, account_ids: Iterable[int | None], now: datetime) -> Ledger:
        accounts = locked_rows(Account, account_ids, _ACCOUNT)
        teams = locked_rows(Team, (a.team_id for a in accounts.values() if isinstance(a, Account)), _TEAM)
        user_app, team_app = _app_credit_rows(app, accounts, teams) if app.project.credit_by_app else ({}, {})
        return cls(now.date(), accounts, teams, user_app, team_app)

    def credit(self, account_id: int | None, amount: float, now: float, *, job: bool = True) -> None:
        """One job's credit for its user, the user's team, and their per-app credit (``job``
        False: partial credit of a running job, which counts no job)."""
        account = self.accounts.get(account_id) if account_id else None
        if not isinstance(account, Account):
            return
        add_credit(account, amount, now)
        team = self.teams.get(account.team_id) if account.team_id else None
        if team is not None:
            add_credit(team, amount, now)
        if self.user_app:
            _add_app_credit(self.user_app[account.pk], amount, now, job)
            if team is not None:
                _add_app_credit(self.team_app[team.pk], amount, now, job)

    def write(self) -> None:
        """One statement per table (a row made by _app_credit_rows is inserted with its
        credit, not inserted then updated)."""
        update_rows(Account, list(self.accounts.values()), CREDIT_FIELDS)
        update_rows(Team, list(self.teams.values()), CREDIT_FIELDS)
        for model, rows in ((UserAppCredit, self.user_app), (TeamAppCredit, self.team_app)):
            new = [r for r in rows.values() if r._state.adding]
            update_rows(model, [r for r in rows.values() if not r._state.adding], _APP_CREDIT_FIELDS)
            model.objects.bulk_create(new)  # type: ignore[arg-type]  # the rows are the loop's model's
        _history(self.day, self.accounts, self.teams)


def _app_credit_rows(
    app: App, accounts: dict[int, Model], teams: dict[int, Model]
) -> tuple[dict[int, UserAppCredit], dict[int, TeamAppCredit]]:
    """The accounts' and teams' per-app rows, by owner id, read in one statement (both tables
    have the same columns in the same order); a missing one is made here, unsaved (the
    owners are locked, so no other validator makes it meanwhile)."""
    users, team_rows = app_credit_rows(app.pk, _USER_APP, _TEAM_APP, accounts, teams)
    user_app: dict[int, UserAppCredit] = {u.account_id: u for u in users}
    team_app: dict[int, TeamAppCredit] = {t.team_id: t for t in team_rows}
    # Made in the owners' (id) order, so the inserted rows get their ids in that order.
    user_app = {pk: user_app.get(pk) or UserAppCredit(app=app, account_id=pk) for pk in accounts}
    team_app = {pk: team_app.get(pk) or TeamAppCredit(app=app, team_id=pk) for pk in teams}
    return user_app, team_app


def _history(day: date, accounts: dict[int, Model], teams: dict[int, Model]) -> None:
    """The day's CreditHistory row of each account and team holds its current credit: one
    read for both owners, one insert of the missing rows, one update of the others."""
    if not accounts and not teams:
        return
    existing: dict[str, dict[int, CreditHistory]] = {"account": {}, "team": {}}
    for h in history_rows(day, _HISTORY, accounts, teams):
        if h.account_id in accounts:
            existing["account"][h.account_id] = h
        if h.team_id in teams:
            existing["team"][h.team_id] = h
    new: list[CreditHistory] = []
    changed: dict[int, CreditHistory] = {}
    for owner, rows in (("account", accounts), ("team", teams)):
        for pk, row in rows.items():
            assert isinstance(row, Account | Team)
            h = existing[owner].get(pk)
            if h is None:
                new.append(
                    CreditHistory(
                        project_id=row.project_id,
                        day=day,
                        total_credit=row.total_credit,
                        expavg_credit=row.expavg_credit,
                        **{f"{owner}_id": pk},
                    )
                )
            else:
                h.total_credit, h.expavg_credit = row.total_credit, row.expavg_credit
                changed[h.pk] = h
    CreditHistory.objects.bulk_create(new)
    update_rows(CreditHistory, list(changed.values()), ["total_credit", "expavg_credit"])
