"""update_stats' daily credit history: one row per user and team and day, holding their totals."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.credit.services import credit_update_stats
from apps.volunteers.models import Account, CreditHistory, Team
from tests.factories import AccountFactory, HostFactory, ProjectFactory, TeamFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    return TeamFactory(project=ProjectFactory(), total_credit=300.0, expavg_credit=30.0)


@pytest.fixture
def account(team, now):
    return AccountFactory(
        project=team.project,
        team=team,
        total_credit=100.0,
        expavg_credit=10.0,
        expavg_time=(now - timedelta(days=1)).timestamp(),
    )


def test_the_days_history_holds_each_users_and_teams_totals(account, team, now):
    credit_update_stats(project=account.project, now=now)

    account = Account.objects.get(id=account.id)
    user_row = CreditHistory.objects.get(account=account, day=now.date())
    team_row = CreditHistory.objects.get(team=team, day=now.date())
    assert (user_row.total_credit, user_row.expavg_credit) == (100.0, account.expavg_credit)
    assert (team_row.total_credit, team_row.expavg_credit) == (300.0, 30.0)


def test_a_second_pass_the_same_day_updates_the_days_row(account, team, now):
    credit_update_stats(project=account.project, now=now)
    Account.objects.filter(id=account.id).update(total_credit=150.0)
    Team.objects.filter(id=team.id).update(total_credit=350.0)

    credit_update_stats(project=account.project, now=now + timedelta(hours=1))

    assert list(CreditHistory.objects.filter(account=account).values_list("day", "total_credit")) == [
        (now.date(), 150.0)
    ]
    assert list(CreditHistory.objects.filter(team=team).values_list("day", "total_credit")) == [
        (now.date(), 350.0)
    ]


def test_users_without_credit_get_no_history(now):
    account = AccountFactory(total_credit=0.0)
    assert credit_update_stats(project=account.project, now=now).items == 0
    assert not CreditHistory.objects.exists()


def test_credit_per_app_decays_with_the_users_and_teams(account, team, now):
    from apps.credit.models import TeamAppCredit, UserAppCredit
    from tests.factories import AppFactory

    app = AppFactory(project=account.project)
    then = (now - timedelta(days=7)).timestamp()
    Account.objects.filter(pk=account.pk).update(expavg_credit=10.0, expavg_time=then)
    UserAppCredit.objects.create(account=account, app=app, total=100.0, expavg=10.0, expavg_time=then)
    TeamAppCredit.objects.create(team=team, app=app, total=100.0, expavg=10.0, expavg_time=then)

    credit_update_stats(project=account.project, now=now)

    user_app = UserAppCredit.objects.get()
    assert user_app.expavg == pytest.approx(Account.objects.get(pk=account.pk).expavg_credit)
    assert user_app.expavg == pytest.approx(5.0)
    assert TeamAppCredit.objects.get().expavg == pytest.approx(5.0)


def test_an_owner_whose_total_is_on_its_last_row_gets_no_new_row(account, team, now):
    yesterday = now.date() - timedelta(days=1)
    CreditHistory.objects.create(project=account.project, account=account, day=yesterday, total_credit=100.0)
    CreditHistory.objects.create(project=team.project, team=team, day=yesterday, total_credit=300.0)

    assert credit_update_stats(project=account.project, now=now).message.endswith(" 0 history rows")

    assert not CreditHistory.objects.filter(day=now.date()).exists()


def test_an_owner_whose_total_changed_without_a_grant_gets_the_days_row(account, now):
    yesterday = now.date() - timedelta(days=1)
    CreditHistory.objects.create(project=account.project, account=account, day=yesterday, total_credit=80.0)

    credit_update_stats(project=account.project, now=now)

    assert list(CreditHistory.objects.filter(account=account).values_list("day", "total_credit")) == [
        (yesterday, 80.0),
        (now.date(), 100.0),
    ]


def test_an_average_updated_after_the_pass_began_is_left_alone(account, now):
    later = (now + timedelta(minutes=5)).timestamp()
    Account.objects.filter(pk=account.pk).update(expavg_credit=12.0, expavg_time=later)

    credit_update_stats(project=account.project, now=now)

    account.refresh_from_db()
    assert (account.expavg_credit, account.expavg_time) == (12.0, later)


def test_a_hosts_average_halves_in_a_week(account, now):
    host = HostFactory(account=account, expavg_credit=8.0, expavg_time=(now - timedelta(days=7)).timestamp())

    credit_update_stats(project=account.project, now=now)

    host.refresh_from_db()
    assert (host.expavg_credit, host.expavg_time) == (pytest.approx(4.0), now.timestamp())


def test_an_average_at_boincs_floor_is_left_as_it_is(account, now):
    week_ago = (now - timedelta(days=7)).timestamp()
    host = HostFactory(account=account, expavg_credit=0.1, expavg_time=week_ago)

    credit_update_stats(project=account.project, now=now)

    host.refresh_from_db()
    assert (host.expavg_credit, host.expavg_time) == (0.1, week_ago)
