"""The assimilator hands a batch over in one pass: a failing hook does not stop the others,
each hook's database writes go or stay with its own outcome, each workunit gets the times of
its own turn, and a pass's statements do not grow with its workunits."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.work.domain.states import AssimilateState
from apps.work.models import Workunit
from apps.work.services import workunits_assimilate, workunits_transition, workunits_validate
from tests.backend.conftest import make_wu, report, results_of, send

pytestmark = pytest.mark.django_db

FAILING: set[str] = set()  # names of the workunits whose hook raises
TAKES: dict[str, float] = {}  # seconds the hook runs for these workunits


class PassClock:
    """The pass's monotonic clock: a hook "takes" time by moving it on."""

    seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


CLOCK = PassClock()


def keywords_hook(workunit, canonical_result, output_paths):
    """Writes to the science tables (here: the workunit's keywords), then fails for FAILING."""
    Workunit.objects.filter(id=workunit.id).update(keywords=f"assimilated {workunit.name}")
    CLOCK.seconds += TAKES.get(workunit.name, 0.0)
    if workunit.name in FAILING:
        raise RuntimeError("science database is down")
    return f"/science/{workunit.name}"


def broken_statement_hook(workunit, canonical_result, output_paths):
    """For FAILING, a statement the database refuses (it breaks the check target >= quorum)."""
    if workunit.name in FAILING:
        Workunit.objects.filter(id=workunit.id).update(target_nresults=0)
    return f"/science/{workunit.name}"


def set_hook(app, name: str) -> None:
    app.assimilator = f"tests.backend.test_assimilator_batch.{name}"
    app.save()


@pytest.fixture(autouse=True)
def _clean():
    FAILING.clear()
    TAKES.clear()
    CLOCK.seconds = 0.0
    yield
    FAILING.clear()
    TAKES.clear()


def ready(project, app, now, *names: str) -> list[Workunit]:
    """Workunits handed to the assimilator (errored out, so no canonical result is needed)."""
    wus = [make_wu(project, app, now, name=name, create_results=False) for name in names]
    Workunit.objects.filter(id__in=[wu.id for wu in wus]).update(assimilate_state=AssimilateState.READY)
    return wus


def state_of(*names: str) -> list[tuple[str, int, str]]:
    return list(
        Workunit.objects.filter(name__in=names)
        .order_by("name")
        .values_list("name", "assimilate_state", "keywords")
    )


def test_a_failing_hook_in_a_batch_does_not_stop_the_others(project, app, now):
    set_hook(app, "keywords_hook")
    ready(project, app, now, "a", "bad", "c")
    FAILING.add("bad")

    outcome = workunits_assimilate(project=project, now=now)

    assert (outcome.items, outcome.errors) == (2, 1)
    assert [(name, state) for name, state, _ in state_of("a", "bad", "c")] == [
        ("a", AssimilateState.DONE),
        ("bad", AssimilateState.READY),
        ("c", AssimilateState.DONE),
    ]


def test_a_failing_hooks_database_writes_are_rolled_back_and_the_others_kept(project, app, now):
    set_hook(app, "keywords_hook")
    ready(project, app, now, "a", "bad", "c")
    FAILING.add("bad")

    workunits_assimilate(project=project, now=now)

    assert [keywords for _, _, keywords in state_of("a", "bad", "c")] == [
        "assimilated a",
        "",
        "assimilated c",
    ]


def test_a_hook_whose_statement_the_database_refuses_does_not_spoil_the_batch(project, app, now):
    set_hook(app, "broken_statement_hook")
    ready(project, app, now, "a", "bad", "c")
    FAILING.add("bad")

    outcome = workunits_assimilate(project=project, now=now)

    assert (outcome.items, outcome.errors) == (2, 1)
    assert Workunit.objects.get(name="bad").assimilate_error.startswith("IntegrityError")
    assert list(
        Workunit.objects.filter(assimilate_state=AssimilateState.DONE).order_by("name").values_list("name")
    ) == [("a",), ("c",)]


def test_a_workunit_handed_over_late_in_a_long_pass_gets_the_transition_time_of_its_turn(project, app, now):
    set_hook(app, "keywords_hook")
    first, late = ready(project, app, now, "first", "late")
    TAKES["first"] = 30 * 60.0

    workunits_assimilate(project=project, now=now, monotonic=CLOCK)

    first.refresh_from_db()
    late.refresh_from_db()
    assert (first.transition_time, late.transition_time) == (now, now + timedelta(minutes=30))
    assert late.assimilate_state == AssimilateState.DONE


def validated(project, app, version, hosts, now, names: list[str]) -> None:
    """Workunits with a canonical result from two agreeing replicas, ready to assimilate."""
    for name in names:
        wu = make_wu(project, app, now, name=name)
        for r, h in zip(results_of(wu), hosts[:2], strict=True):
            send(r, h, version, now)
            report(r, now, output=b"result\n")
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)


def statements_of_a_pass(project, now) -> int:
    with CaptureQueriesContext(connection) as queries:
        outcome = workunits_assimilate(project=project, now=now)
    assert outcome.errors == 0
    return len(queries)


def test_a_pass_over_five_workunits_takes_as_many_statements_as_over_one(project, app, version, hosts, now):
    validated(project, app, version, hosts, now, ["one"])
    one = statements_of_a_pass(project, now)
    validated(project, app, version, hosts, now, [f"five-{i}" for i in range(5)])

    five = statements_of_a_pass(project, now)

    assert five == one
    assert Workunit.objects.filter(assimilate_state=AssimilateState.DONE).count() == 6


ENQUEUED: list[str] = []


def enqueuing_hook(workunit, canonical_result, output_paths):
    """Enqueues work for after the commit, then fails for FAILING."""
    transaction.on_commit(lambda: ENQUEUED.append(workunit.name))
    if workunit.name in FAILING:
        raise RuntimeError("science database is down")
    return f"/science/{workunit.name}"


def test_a_failing_hooks_on_commit_callbacks_are_dropped_and_the_others_run(
    project, app, now, django_capture_on_commit_callbacks
):
    set_hook(app, "enqueuing_hook")
    ready(project, app, now, "a", "bad", "c")
    FAILING.add("bad")
    ENQUEUED.clear()

    with django_capture_on_commit_callbacks(execute=True):
        workunits_assimilate(project=project, now=now)

    assert ENQUEUED == ["a", "c"]
