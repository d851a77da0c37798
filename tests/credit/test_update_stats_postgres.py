"""update_stats and a validator granting credit at the same moment, on PostgreSQL.

update_stats writes each user's and team's row of the day's credit history from their
totals. A grant that commits while it does so must not leave that row behind the totals:
the test stops update_stats right after it has read a user's totals, lets a grant to that
user start, then lets both go on. Likewise a grant committed after update_stats chose the
averages to decay keeps its figures: it is newer than the decay.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import connection, transaction

from apps.credit.services import credit_grant, credit_update_stats
from apps.volunteers.models import Account, CreditHistory
from tests.credit.builders import credit_job, credit_workunit
from tests.factories import AccountFactory, AppFactory, AppVersionFactory, HostFactory, ProjectFactory
from tests.threads import in_thread, wait_for, waiting_on_a_lock

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]


def _update_stats_pausing(
    project, now, marker: str, *, reached: threading.Event, go_on: threading.Event
) -> Callable[[], None]:
    """update_stats, stopping right after its first statement containing ``marker`` until
    ``go_on`` is set (``reached`` tells it got there)."""

    def pause(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not reached.is_set() and marker in sql:
            reached.set()
            assert go_on.wait(20), "the test never let update_stats go on"
        return result

    def update_stats() -> None:
        with connection.execute_wrapper(pause):
            credit_update_stats(project=project, now=now)

    return update_stats


@pytest.mark.parametrize("earlier_grant_today", [True, False], ids=["history-row-exists", "first-of-day"])
def test_a_grant_during_update_stats_leaves_the_days_history_equal_to_the_users_total(
    earlier_grant_today, now
):
    project = ProjectFactory()
    app = AppFactory(project=project)
    version = AppVersionFactory(app=app)
    account = AccountFactory(
        project=project, total_credit=100.0, expavg_credit=10.0, expavg_time=now.timestamp() - 3600
    )
    host = HostFactory(account=account)
    if earlier_grant_today:
        CreditHistory.objects.create(
            project=project, account=account, day=now.date(), total_credit=100.0, expavg_credit=10.0
        )
    job = credit_job(host, version, now)
    workunit = credit_workunit(app, canonical_granted_credit=50.0)
    owners_read, go_on, granted, release = (threading.Event() for _ in range(4))

    update_stats = _update_stats_pausing(
        project, now, '"volunteers_account"."total_credit" >', reached=owners_read, go_on=go_on
    )

    def grant() -> None:
        with transaction.atomic():
            credit_grant(workunit=workunit, jobs=[job], now=now + timedelta(minutes=1))
            granted.set()
            assert release.wait(20), "the test never let the grant commit"

    stats, stats_errors = in_thread(update_stats)
    assert owners_read.wait(20), "update_stats never read the users"
    validator, grant_errors = in_thread(grant)
    wait_for(lambda: granted.is_set() or waiting_on_a_lock())
    go_on.set()
    release.set()
    stats.join(30)
    validator.join(30)

    assert (stats_errors, grant_errors) == ([], [])
    account = Account.objects.get(id=account.id)
    assert account.total_credit == 150.0
    history = CreditHistory.objects.get(account=account, day=now.date())
    assert (history.total_credit, history.expavg_credit) == (150.0, account.expavg_credit)


def test_an_average_a_grant_updates_during_the_decay_keeps_the_grants_figures(now):
    project = ProjectFactory()
    app = AppFactory(project=project)
    version = AppVersionFactory(app=app)
    account = AccountFactory(
        project=project, total_credit=100.0, expavg_credit=10.0, expavg_time=now.timestamp() - 86400
    )
    job = credit_job(HostFactory(account=account), version, now)
    workunit = credit_workunit(app, canonical_granted_credit=50.0)
    averages_read, go_on = threading.Event(), threading.Event()

    update_stats = _update_stats_pausing(
        project, now, '"volunteers_account"."expavg_credit" >', reached=averages_read, go_on=go_on
    )

    stats, stats_errors = in_thread(update_stats)
    assert averages_read.wait(20), "update_stats never read the averages"
    credit_grant(workunit=workunit, jobs=[job], now=now + timedelta(minutes=1))
    granted = Account.objects.values_list("expavg_credit", "expavg_time").get(id=account.id)
    go_on.set()
    stats.join(30)

    assert stats_errors == []
    assert granted[1] == (now + timedelta(minutes=1)).timestamp()
    assert Account.objects.values_list("expavg_credit", "expavg_time").get(id=account.id) == granted
