"""Validators running at once on PostgreSQL: each claims its own batches, so every workunit is
validated once and every valid result credited once; a claim skips what another holds."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from django.db import connection, transaction

from apps.applications.models import AppVersion
from apps.hosts.models import Host
from apps.projects.services import DaemonPass
from apps.work.domain.states import ValidateState
from apps.work.models import Result, Workunit
from apps.work.services import validator, workunits_transition, workunits_validate
from tests.backend.conftest import make_host, make_wu, report, results_of, send
from tests.factories import AppVersionFactory
from tests.threads import in_thread

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]

WORKUNITS = 24


@pytest.fixture
def ready(project, app, version, team, now) -> list[Workunit]:
    """Workunits whose two results went to six hosts in turn, reported and ready to validate."""
    hosts = [make_host(project, team=team) for _ in range(6)]
    wus = []
    for i in range(WORKUNITS):
        wu = make_wu(project, app, now, name=f"race{i}")
        for j, r in enumerate(results_of(wu)):
            send(r, hosts[(i + j) % len(hosts)], version, now)
            report(r, now, output=b"same\n")
        wus.append(wu)
    workunits_transition(project=project, now=now)
    return wus


def _race(monkeypatch, project, now) -> list[DaemonPass]:
    """Two validators in threads, starting together, in batches small enough to interleave."""
    monkeypatch.setattr(validator, "BATCH", 4)
    barrier = threading.Barrier(2)
    passes: list[DaemonPass] = []

    def validate() -> None:
        barrier.wait()
        passes.append(workunits_validate(project=project, now=now))

    runs = [in_thread(validate) for _ in range(2)]
    for thread, _ in runs:
        thread.join(60)
    assert [errors for _, errors in runs] == [[], []]
    return passes


def test_two_validators_at_once_validate_each_workunit_once(monkeypatch, project, ready, now):
    passes = _race(monkeypatch, project, now)

    assert sum(p.items for p in passes) == WORKUNITS
    assert sum(p.errors for p in passes) == 0
    assert set(Result.objects.values_list("validate_state", flat=True)) == {ValidateState.VALID}


def test_two_validators_at_once_grant_each_result_its_credit_once(monkeypatch, project, version, ready, now):
    _race(monkeypatch, project, now)

    granted: dict[int, float] = defaultdict(float)
    for host_id, credit in Result.objects.values_list("host_id", "granted_credit"):
        granted[host_id] += credit
    totals = dict(Host.objects.filter(id__in=granted).values_list("id", "total_credit"))
    assert totals == pytest.approx(dict(granted))
    assert AppVersion.objects.get(id=version.id).pfc_n == 2 * WORKUNITS


def test_a_claim_skips_the_workunits_another_validator_holds(project, app, ready, now):
    held, release = threading.Event(), threading.Event()
    first = ready[0].id

    def hold_first() -> None:
        with transaction.atomic():
            Workunit.objects.select_for_update().filter(id=first).get()
            held.set()
            release.wait(30)

    thread, errors = in_thread(hold_first)
    assert held.wait(20)
    try:
        # Were it to wait for the held row, the claim would return only once the holder gives
        # up (30 s), with that row in it.
        claimed = validator.workunits_claim(app_id=app.id, now=now, limit=WORKUNITS)
    finally:
        release.set()
        thread.join(30)
    assert errors == []
    assert [c.id for c in claimed] == [wu.id for wu in ready[1:]]


def test_a_validator_does_not_wait_for_the_app_version_of_an_invalid_result_it_only_reads(
    project, app, version, team, now
):
    """The credit batch locks the rows it writes: an app version whose only result in the
    batch is invalid is read, so a writer holding it (the feeder) does not hold up validation."""
    hosts = [make_host(project, team=team) for _ in range(3)]
    other = AppVersionFactory(app=app, version_num=version.version_num + 1)
    wu = make_wu(project, app, now, name="odd", target_nresults=3)
    for r, host, v, output in zip(
        results_of(wu), hosts, (version, version, other), (b"1\n", b"1\n", b"2\n"), strict=True
    ):
        send(r, host, v, now)
        report(r, now, output=output)
    workunits_transition(project=project, now=now)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            AppVersion.objects.select_for_update().get(id=other.id)
            locked.set()
            release.wait(10)

    holder, errors = in_thread(hold)
    locked.wait(10)
    began = time.monotonic()
    outcome = workunits_validate(project=project, now=now)
    took = time.monotonic() - began
    release.set()
    holder.join(20)

    assert errors == []
    assert (outcome.items, took < 5) == (1, True)
    assert sorted(r.validate_state for r in results_of(wu)) == [
        ValidateState.VALID,
        ValidateState.VALID,
        ValidateState.INVALID,
    ]


def test_a_validator_reads_the_outputs_before_it_locks_the_hosts_rows(monkeypatch, project, ready, now):
    """Reading files may be slow: the scheduler RPCs of the batch's hosts must not wait for it."""
    in_transaction = []
    read = validator.payloads_read

    def payloads_read(*args):
        in_transaction.append(connection.in_atomic_block)
        return read(*args)

    monkeypatch.setattr(validator, "payloads_read", payloads_read)

    outcome = workunits_validate(project=project, now=now)

    assert outcome.items == WORKUNITS
    assert in_transaction == [False] * len(in_transaction) != []
