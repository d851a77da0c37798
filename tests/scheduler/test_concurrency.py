"""Dispatch never sends a result twice and loses none, under many concurrent RPCs.

On PostgreSQL (the PostgreSQL pass of `make test`) this is the real test: thousands of
jobs, dozens of hosts at once, SKIP LOCKED row locks. On SQLite the same test runs
smaller; there every RPC's transaction takes the write lock at BEGIN, so RPCs queue.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace

import pytest
from django.db import connection, connections

from apps.core import clock
from apps.scheduler.services import dispatch, scheduler_request_handle
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.scheduler.conftest import flush_paused, make_jobs, make_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.postgres]


def sizes() -> tuple[int, int]:
    """(jobs, concurrent hosts): the full size on PostgreSQL, smaller on SQLite."""
    return (3000, 40) if connection.vendor == "postgresql" else (400, 8)


def host_loop(
    project, authenticator: str, index: int, received: list[str], errors: list[BaseException]
) -> None:
    try:
        base = make_request(authenticator, cpu_req_secs=500.0, work_req_seconds=500.0)
        req = replace(base, host_info=replace(base.host_info, host_cpid=f"concurrent-{index}"))
        hostid, seqno = 0, 0
        empty_replies = 0
        while empty_replies < 2:
            reply = scheduler_request_handle(
                project=project, req=replace(req, hostid=hostid, rpc_seqno=seqno), now=clock.now()
            )
            hostid = reply.hostid or hostid
            seqno = 0 if reply.hostid else seqno + 1
            received.extend(r.name for r in reply.results)
            empty_replies = 0 if reply.results else empty_replies + 1
    except BaseException as exc:
        errors.append(exc)
    finally:
        connections.close_all()


def test_concurrent_hosts_get_every_job_exactly_once(project, account, cpu_app):
    njobs, nhosts = sizes()
    make_jobs(project, cpu_app, njobs)
    received: list[str] = []
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=host_loop, args=(project, account.authenticator, i, received, errors))
        for i in range(nhosts)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)

    assert errors == []
    duplicates = [name for name, n in Counter(received).items() if n > 1]
    assert duplicates == []
    assert len(received) == njobs
    assert Result.objects.filter(server_state=ServerState.UNSENT).count() == 0
    assert Result.objects.filter(server_state=ServerState.IN_PROGRESS, host__isnull=False).count() == njobs
    if connection.vendor == "postgresql":
        # Row locks with SKIP LOCKED let hosts dispatch side by side, so the work is shared;
        # SQLite's write lock is not fair, and one host may legitimately win every round.
        per_host = Counter(Result.objects.values_list("host_id", flat=True))
        assert len(per_host) > 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one RPC at a time")
def test_two_hosts_of_one_user_at_once_never_get_both_results_of_a_workunit(
    project, account, cpu_app, monkeypatch
):
    project.one_result_per_user_per_wu = True
    project.save()
    make_jobs(project, cpu_app, 10, min_quorum=2, target_nresults=2)
    dispatch._typical_fpops[cpu_app.id] = 1e11  # windows sized to the request, as after earlier RPCs
    # Host A pauses just before writing its sends, until B is about to write its own (or 2 s):
    # without a rule across the user's hosts, B reads the candidates A holds back.
    a_waits = flush_paused(monkeypatch, "A")
    errors: list[BaseException] = []

    def rpc(name: str) -> None:
        try:
            base = make_request(account.authenticator, cpu_req_secs=250.0, work_req_seconds=250.0)
            req = replace(base, host_info=replace(base.host_info, host_cpid=f"cpid-{name}"))
            scheduler_request_handle(project=project, req=req, now=clock.now())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    a = threading.Thread(target=rpc, args=("A",), name="A")
    a.start()
    assert a_waits.wait(20)
    b = threading.Thread(target=rpc, args=("B",), name="B")
    b.start()
    a.join(30)
    b.join(30)
    assert not errors
    per_workunit = Counter(Result.objects.filter(account=account).values_list("workunit_id", flat=True))
    assert sum(per_workunit.values()) == 6  # 250 s of 100-second jobs, to each host
    assert max(per_workunit.values()) == 1
