"""The assimilator on PostgreSQL: two workers never hand one workunit over twice (nor does one
whose lease ran out in the hook), and the pass reads its workunits through wu_assimilate_ready
without sorting them."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection

from apps.work.domain.states import AssimilateState
from apps.work.models import Workunit
from apps.work.services import workunits_assimilate
from apps.work.services.assimilator import CLAIM_LEASE
from tests.backend.conftest import make_wu
from tests.threads import in_thread

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]

HOOK = "tests.backend.test_assimilator_postgres.recording_hook"
CALLS: list[str] = []
SCIENCE = "test_assimilator_science"  # stands for the project's science tables


class Gate:
    """Holds one hook call until the test opens it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def hold(self) -> None:
        self.entered.set()
        assert self.opened.wait(20), "the test never opened the gate"


GATES: list[Gate] = []  # the hook's calls for "held", in order


def recording_hook(workunit, canonical_result, output_paths):
    CALLS.append(workunit.name)
    run = CALLS.count(workunit.name)
    if workunit.name == "held":
        GATES[run - 1].hold()
        with connection.cursor() as cursor:  # in the assimilator's transaction
            cursor.execute(f"INSERT INTO {SCIENCE} (name, run) VALUES (%s, %s)", [workunit.name, run])
    time.sleep(0.005)  # long enough for the other worker to reach the same rows
    return f"/done/{workunit.name}/{run}"


@pytest.fixture
def hook(app):
    app.assimilator = HOOK
    app.save()
    CALLS.clear()
    GATES[:] = [Gate(), Gate()]
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {SCIENCE} (name text, run integer)")
    yield
    for gate in GATES:
        gate.opened.set()
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {SCIENCE}")


def ready(project, app, now, name: str) -> Workunit:
    wu = make_wu(project, app, now, name=name, create_results=False)
    Workunit.objects.filter(id=wu.id).update(assimilate_state=AssimilateState.READY)
    return wu


@pytest.mark.django_db(transaction=True)
def test_two_assimilators_at_once_hand_each_workunit_over_once(hook, project, app, now):
    names = [f"wu{i}" for i in range(40)]
    for name in names:
        ready(project, app, now, name)

    workers = [in_thread(lambda: workunits_assimilate(project=project, now=now)) for _ in range(2)]
    for thread, _ in workers:
        thread.join(60)

    assert [errors for _, errors in workers] == [[], []]
    assert sorted(CALLS) == sorted(names)
    assert Workunit.objects.filter(assimilate_state=AssimilateState.DONE).count() == 40


@pytest.mark.django_db(transaction=True)
def test_a_workunit_in_one_assimilators_hook_is_left_alone_by_another(hook, project, app, now):
    held = ready(project, app, now, "held")
    first, errors = in_thread(lambda: workunits_assimilate(project=project, now=now))
    assert GATES[0].entered.wait(20), "the first assimilator never reached the hook"

    second = workunits_assimilate(project=project, now=now + timedelta(seconds=15))
    GATES[0].opened.set()
    first.join(30)

    assert errors == []
    assert (second.items, second.errors) == (0, 0)
    assert CALLS == ["held"]
    held.refresh_from_db()
    assert (held.assimilate_state, held.assimilated_path) == (AssimilateState.DONE, "/done/held/1")


@pytest.mark.django_db(transaction=True)
def test_an_assimilator_whose_lease_ran_out_in_the_hook_leaves_the_workunit_to_the_next(
    hook, project, app, now
):
    held = ready(project, app, now, "held")
    passes = {}
    first, first_errors = in_thread(
        lambda: passes.update(first=workunits_assimilate(project=project, now=now))
    )
    assert GATES[0].entered.wait(20), "the first assimilator never reached the hook"
    # Past the first one's lease, a second assimilator claims the workunit and runs the hook.
    later = now + CLAIM_LEASE + timedelta(minutes=1)
    second, second_errors = in_thread(
        lambda: passes.update(second=workunits_assimilate(project=project, now=later))
    )
    assert GATES[1].entered.wait(20), "the second assimilator never reached the hook"

    GATES[0].opened.set()  # the first hook ends while the second is still running
    first.join(30)
    GATES[1].opened.set()
    second.join(30)

    assert (first_errors, second_errors) == ([], [])
    assert [(p.items, p.errors) for p in (passes["first"], passes["second"])] == [(0, 1), (1, 0)]
    held.refresh_from_db()
    assert (held.assimilate_state, held.assimilated_path) == (AssimilateState.DONE, "/done/held/2")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT name, run FROM {SCIENCE}")
        assert cursor.fetchall() == [("held", 2)]


def test_the_pass_reads_ready_workunits_through_the_index_in_order(hook, project, app, now):
    # Thousands of workunits, a tenth READY, a sixth of those with a retry time (due or not).
    rows = [
        Workunit(
            project=project,
            app=app,
            name=f"w{i}",
            assimilate_state=AssimilateState.READY if i % 10 == 0 else AssimilateState.DONE,
            assimilate_retry_time=now + timedelta(minutes=i % 7 - 3) if i % 60 == 0 else None,
        )
        for i in range(6000)
    ]
    Workunit.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE work_workunit")
    plans: list[str] = []

    def explain(execute, sql, params, many, context):
        if sql.startswith("SELECT") and "assimilate_retry_time" in sql.partition("WHERE")[2]:
            raw = context["cursor"].cursor  # below the wrappers, so this EXPLAIN is not explained
            raw.execute(f"EXPLAIN {sql}", params)
            plans.append("\n".join(row[0] for row in raw.fetchall()))
        return execute(sql, params, many, context)

    # A backlog bigger than the batch: with fewer READY rows than the batch, sorting them all
    # costs no more than reading the batch, and the planner may do that.
    with connection.execute_wrapper(explain):
        workunits_assimilate(project=project, now=now, limit=100)

    assert len(plans) == 3  # due retries, new workunits, the count of those backing off
    for plan in plans:
        assert "wu_assimilate_ready" in plan, plan
        assert "Sort" not in plan, plan
