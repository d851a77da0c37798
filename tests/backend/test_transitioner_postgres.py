"""The transitioner's batches on PostgreSQL: concurrent workers claim disjoint batches, and a
batch holding results locked waits for the transaction that holds them instead of failing."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Count

import apps.work.services.transitioner as transitioner
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result, Workunit
from apps.work.services import workunits_transition
from apps.work.services.transitioner import _claim_due
from tests.backend.conftest import make_wu, results_of, send
from tests.threads import in_thread, wait_for, waiting_on_a_lock

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]


def test_two_transitioners_at_once_make_each_workunits_results_once(monkeypatch, project, app, now):
    monkeypatch.setattr(transitioner, "CLAIM_BATCH", 5)
    wus = [make_wu(project, app, now, f"wu{i}", create_results=False) for i in range(60)]
    passes: list[object] = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait(10)
        passes.append(workunits_transition(project=project, now=now))

    threads = [in_thread(run) for _ in range(2)]
    for thread, _errors in threads:
        thread.join(60)
    assert [e for _t, errors in threads for e in errors] == []
    assert sum(p.errors for p in passes) == 0
    assert sum(p.items for p in passes) == len(wus)
    counts = Result.objects.values("workunit_id").annotate(n=Count("id")).values_list("workunit_id", "n")
    assert dict(counts) == {wu.id: 2 for wu in wus}


def test_claims_skip_workunits_another_worker_is_claiming(project, app, now):
    wus = [make_wu(project, app, now, f"wu{i}", create_results=False) for i in range(3)]
    held = threading.Event()
    release = threading.Event()

    def hold_one() -> None:
        with transaction.atomic():
            Workunit.objects.select_for_update().filter(id=wus[0].id).get()
            held.set()
            assert release.wait(20)

    thread, errors = in_thread(hold_one)
    assert held.wait(20)
    try:
        claimed = [c.workunit_id for c in _claim_due(project.id, now, 10)]
    finally:
        release.set()
        thread.join(20)
    assert errors == []
    assert claimed == [wus[1].id, wus[2].id]  # without waiting for the locked one
    assert [c.workunit_id for c in _claim_due(project.id, now, 10)] == [wus[0].id]


def test_a_batch_waits_for_a_transaction_holding_one_of_its_results(project, app, version, hosts, now):
    wus = [make_wu(project, app, now, f"wu{i}") for i in range(3)]
    late = results_of(wus[1])[0]
    send(late, hosts[0], version, now, delay=60)
    later = now + timedelta(hours=2)  # past the deadline and the hour of grace
    Workunit.objects.filter(id__in=[w.id for w in wus]).update(transition_time=later)
    holding, release = threading.Event(), threading.Event()

    def report_slowly() -> None:
        # A scheduler RPC reporting the result: locks it, then writes it a little later.
        with transaction.atomic():
            Result.objects.select_for_update().filter(id=late.id).get()
            holding.set()
            assert release.wait(20)
            Result.objects.filter(id=late.id).update(
                server_state=ServerState.OVER, outcome=Outcome.SUCCESS, received_time=later
            )

    thread, errors = in_thread(report_slowly)
    assert holding.wait(20)
    passes: list[object] = []
    daemon, daemon_errors = in_thread(lambda: passes.append(workunits_transition(project=project, now=later)))
    wait_for(waiting_on_a_lock)
    release.set()
    thread.join(20)
    daemon.join(20)
    assert errors == daemon_errors == []
    [outcome] = passes
    assert outcome.errors == 0
    late.refresh_from_db()
    assert (late.server_state, late.outcome) == (ServerState.OVER, Outcome.SUCCESS)  # reported, not timed out
    assert len(results_of(wus[1])) == 2  # and so not replaced
