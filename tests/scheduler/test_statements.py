"""An RPC's database statements do not grow with the jobs it sends or the results it reports.

The scheduler reads candidate and reported results with only the columns it uses; a
column it forgot would load on first access, one query per row. These tests see that.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.scheduler.conftest import make_jobs, make_request, reported, rpc

pytestmark = pytest.mark.django_db


def _statements(client, project, req) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as queries:
        reply = rpc(client, project, req)
    return len(queries), reply


def _ask(account, hostid: int, seqno: int, instances: float, **kw):
    return make_request(
        account.authenticator,
        hostid=hostid,
        rpc_seqno=seqno,
        cpu_req_secs=0.0,
        cpu_req_instances=instances,
        work_req_seconds=0.0,
        **kw,
    )


def test_sending_four_jobs_takes_as_many_statements_as_sending_one(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 10)
    first = rpc(client, project, make_request(account.authenticator))  # creates the host
    one, reply_one = _statements(client, project, _ask(account, first.hostid, 1, 1.0))
    four, reply_four = _statements(client, project, _ask(account, first.hostid, 2, 4.0))
    assert (len(reply_one.results), len(reply_four.results)) == (1, 4)
    assert four == one


def test_reporting_four_results_takes_as_many_statements_as_reporting_one(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 10)
    first = rpc(client, project, make_request(account.authenticator))
    held = [r.name for r in rpc(client, project, _ask(account, first.hostid, 1, 4.0)).results]
    held.append(first.results[0].name)
    one, reply_one = _statements(
        client, project, _ask(account, first.hostid, 2, 0.0, results=(reported(held[0]),))
    )
    four, reply_four = _statements(
        client, project, _ask(account, first.hostid, 3, 0.0, results=tuple(reported(n) for n in held[1:]))
    )
    assert (len(reply_one.result_acks), len(reply_four.result_acks)) == (1, 4)
    assert four == one


@pytest.mark.skipif(connection.vendor != "postgresql", reason="plan choice is PostgreSQL's")
@pytest.mark.django_db(transaction=True)  # the RPC's transaction is the outermost, as when served
def test_an_rpc_runs_its_statements_on_generic_plans(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 3)
    with CaptureQueriesContext(connection) as queries:
        reply = rpc(client, project, make_request(account.authenticator))
    assert len(reply.results) == 1
    statements = [q["sql"] for q in queries.captured_queries]
    setting = statements.index("SET LOCAL plan_cache_mode = force_generic_plan")
    assert all("auth" not in s for s in statements[:setting])  # before the account is looked up
    with connection.cursor() as cursor:  # and only for the RPC's transaction
        cursor.execute("SELECT current_setting('plan_cache_mode')")
        assert cursor.fetchone()[0] == "auto"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="heap-only updates are PostgreSQL's")
def test_a_returning_hosts_row_is_updated_without_touching_its_indexes(client, project, account, cpu_app):
    # Every RPC rewrites the host row; with no indexed column changed PostgreSQL can update
    # it in place (HOT) instead of adding an entry to each of the table's indexes.
    make_jobs(project, cpu_app, 3)
    first = rpc(client, project, make_request(account.authenticator))

    def host_updates() -> tuple[int, int]:
        with connection.cursor() as cursor:  # this transaction's own counts
            cursor.execute(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'hosts_host'"
            )
            return cursor.fetchone()

    before = host_updates()
    reply = rpc(client, project, _ask(account, first.hostid, 1, 1.0))
    after = host_updates()
    assert len(reply.results) == 1
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
