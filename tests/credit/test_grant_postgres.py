"""A validator granting credit and a scheduler RPC sending work at the same moment, on PostgreSQL.

The results an RPC sends name a host, an account and an app version; PostgreSQL checks those
foreign keys when the RPC commits, with KEY SHARE locks on the rows they name. A validator
granting credit to another host of the same volunteer locks the app version and then the
account. When its lock blocked the RPC's commit, and the RPC's key check on the account blocked
the validator, the two deadlocked: the RPC's client was told the project is down. The RPC must
commit while the validator holds its locks.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from apps.credit.services import credit_grant
from apps.volunteers.models import Account
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.credit.builders import credit_job, credit_workunit
from tests.factories import (
    AccountFactory,
    AppFactory,
    AppVersionFactory,
    HostFactory,
    ProjectFactory,
    ResultFactory,
    WorkunitFactory,
)
from tests.threads import in_thread

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]


def test_a_scheduler_rpc_commits_while_a_validator_holds_the_credit_locks_of_its_volunteer(now):
    project = ProjectFactory()
    app = AppFactory(project=project)
    version = AppVersionFactory(app=app)
    account = AccountFactory(project=project)
    validated_host, calling_host = HostFactory(account=account), HostFactory(account=account)
    unsent = ResultFactory(workunit=WorkunitFactory(project=project, app=app))
    job = credit_job(validated_host, version, now)
    workunit = credit_workunit(app, canonical_granted_credit=50.0)
    granted, release, sent = (threading.Event() for _ in range(3))

    def grant() -> None:
        with transaction.atomic():
            credit_grant(workunit=workunit, jobs=[job], now=now)
            granted.set()  # the app version, the host and the account are locked
            assert release.wait(20), "the test never let the grant commit"

    def send() -> None:
        # What a scheduler RPC writes when it sends the result to the other host.
        with transaction.atomic():
            Result.objects.filter(id=unsent.id).update(
                server_state=ServerState.IN_PROGRESS,
                host=calling_host,
                account=account,
                app_version=version,
                sent_time=now,
            )
        sent.set()

    validator, grant_errors = in_thread(grant)
    assert granted.wait(20), "the grant never took its locks"
    rpc, send_errors = in_thread(send)
    committed_meanwhile = sent.wait(10)
    release.set()
    validator.join(30)
    rpc.join(30)

    assert (grant_errors, send_errors) == ([], [])
    assert committed_meanwhile
    assert Account.objects.get(id=account.id).total_credit == 50.0
    assert Result.objects.get(id=unsent.id).host_id == calling_host.id
