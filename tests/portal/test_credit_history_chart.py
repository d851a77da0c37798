"""The credit chart of a user or team: every day's total, carried over the days with no history row
(update_stats writes a day's row only for an owner whose total changed)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from apps.credit.services import UPDATE_STATS_DAEMON, credit_update_stats
from apps.portal.charts import credit_chart_html
from apps.portal.volunteer_selectors import credit_history
from apps.projects.services import DaemonPass, daemon_run_record
from apps.volunteers.models import Account, CreditHistory
from tests.factories import AccountFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db

DAY0 = date(2026, 11, 1)


def _day(n: int) -> date:
    return DAY0 + timedelta(days=n)


def _pass(project, day: date) -> None:
    """update_stats' nightly pass as its task runs it: the pass, then its DaemonRun."""
    now = datetime(day.year, day.month, day.day, 2, tzinfo=UTC)
    outcome = credit_update_stats(project=project, now=now)
    daemon_run_record(project=project, daemon=UPDATE_STATS_DAEMON, started=now, duration=1.0, outcome=outcome)


def _grant(account, day: date, total: float) -> None:
    """What a grant leaves: the new total and the ledger's row of the day."""
    Account.objects.filter(pk=account.pk).update(total_credit=total)
    CreditHistory.objects.create(project=account.project, account=account, day=day, total_credit=total)


def test_the_chart_after_nightly_passes_holds_every_days_total():
    account = AccountFactory()
    _grant(account, _day(0), 100.0)
    _pass(account.project, _day(1))
    _grant(account, _day(2), 150.0)
    for n in range(2, 5):
        _pass(account.project, _day(n))

    assert credit_history(account=account) == [
        (_day(0), 100.0),
        (_day(1), 100.0),
        (_day(2), 150.0),
        (_day(3), 150.0),
        (_day(4), 150.0),
    ]


def test_the_chart_is_the_one_of_a_row_every_day():
    project = ProjectFactory()
    every_day, on_change = AccountFactory(project=project), AccountFactory(project=project)
    totals = [100.0, 100.0, 150.0, 150.0, 150.0]
    for n, total in enumerate(totals):
        CreditHistory.objects.create(project=project, account=every_day, day=_day(n), total_credit=total)
        if n == 0 or total != totals[n - 1]:
            CreditHistory.objects.create(project=project, account=on_change, day=_day(n), total_credit=total)
    daemon_run_record(
        project=project,
        daemon=UPDATE_STATS_DAEMON,
        started=datetime(2026, 11, 5, 2, tzinfo=UTC),
        duration=1.0,
        outcome=DaemonPass(items=1),
    )

    assert credit_history(account=on_change) == credit_history(account=every_day)
    assert credit_chart_html(credit_history(account=on_change)) == credit_chart_html(
        credit_history(account=every_day)
    )


def test_a_team_without_an_update_stats_pass_ends_at_its_last_row():
    team = TeamFactory()
    for day, total in ((_day(0), 10.0), (_day(2), 30.0)):
        CreditHistory.objects.create(project=team.project, team=team, day=day, total_credit=total)

    assert credit_history(team=team) == [(_day(0), 10.0), (_day(1), 10.0), (_day(2), 30.0)]
