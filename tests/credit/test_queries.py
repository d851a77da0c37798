"""apps.credit.queries gives what a plain ORM version gives on the same rows (both passes:
SQLite by default, PostgreSQL with DATABASE_URL, so each vendor branch runs in one of them)."""

import pytest
from django.db.models import Q
from django.utils import timezone

from apps.core.db import ModelColumns
from apps.credit.models import TeamAppCredit, UserAppCredit
from apps.credit.queries import app_credit_rows, hav_key, history_rows, locked_havs, locked_rows
from apps.hosts.models import HostAppVersion
from apps.volunteers.models import Account, CreditHistory
from tests.factories import (
    AccountFactory,
    AppFactory,
    AppVersionFactory,
    HostAppVersionFactory,
    HostFactory,
    TeamFactory,
)

pytestmark = pytest.mark.django_db


def _fields(obj: object) -> dict[str, object]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def test_locked_rows_equal_the_orm_rows() -> None:
    accounts = [AccountFactory() for _ in range(3)]
    ids = [accounts[2].id, accounts[0].id, None]
    found = locked_rows(Account, ids)
    expected = Account.objects.filter(id__in=[accounts[0].id, accounts[2].id]).order_by("id")
    assert list(found) == [a.id for a in expected]
    assert [_fields(a) for a in found.values()] == [_fields(a) for a in expected]


def test_locked_havs_equal_the_orm_filter() -> None:
    version = AppVersionFactory()
    app = version.app
    host, other = HostFactory(), HostFactory()
    by_version = HostAppVersionFactory(host=host, app_version=version)
    anonymous = HostAppVersionFactory(host=other, app_version=None, app=app, anonymous_proc_type="NVIDIA")
    HostAppVersionFactory(host=other, app_version=None, app=app, anonymous_proc_type="CPU")  # not asked for
    keys = {hav_key(host.id, version.id, ""), hav_key(other.id, None, "NVIDIA")}
    found = locked_havs(app, keys)
    expected = HostAppVersion.objects.filter(
        Q(host=host, app_version=version)
        | Q(host=other, app_version__isnull=True, app=app, anonymous_proc_type="NVIDIA")
    ).order_by("id")
    assert {k: h.id for k, h in found.items()} == {
        hav_key(h.host_id, h.app_version_id, h.anonymous_proc_type): h.id for h in expected
    }
    assert {h.id for h in found.values()} == {by_version.id, anonymous.id}


def test_app_credit_rows_equal_the_orm_filters() -> None:
    app = AppFactory()
    accounts = [AccountFactory(project=app.project) for _ in range(2)]
    team = TeamFactory(project=app.project)
    UserAppCredit.objects.create(app=app, account=accounts[0], total=5)
    TeamAppCredit.objects.create(app=app, team=team, total=7)
    UserAppCredit.objects.create(app=AppFactory(), account=accounts[1], total=1)  # another app
    users, teams = app_credit_rows(
        app.pk,
        ModelColumns(UserAppCredit, "c"),
        ModelColumns(TeamAppCredit, "c"),
        [a.id for a in accounts],
        [team.id],
    )
    assert [_fields(u) for u in users] == [
        _fields(u) for u in UserAppCredit.objects.filter(app=app, account__in=accounts)
    ]
    assert [_fields(t) for t in teams] == [
        _fields(t) for t in TeamAppCredit.objects.filter(app=app, team=team)
    ]


def test_history_rows_equal_the_orm_filter() -> None:
    account, team = AccountFactory(), TeamFactory()
    today = timezone.now().date()
    mine = CreditHistory.objects.create(project=account.project, account=account, day=today)
    CreditHistory.objects.create(project=team.project, team=team, day=today)
    CreditHistory.objects.create(
        project=account.project, account=AccountFactory(), day=today
    )  # not asked for
    found = history_rows(today, ModelColumns(CreditHistory, "h"), [account.id], [team.id])
    expected = CreditHistory.objects.filter(Q(account=account) | Q(team=team), day=today)
    assert sorted(h.id for h in found) == sorted(h.id for h in expected)
    assert [_fields(h) for h in found if h.id == mine.id] == [_fields(CreditHistory.objects.get(id=mine.id))]
