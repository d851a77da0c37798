"""An assimilator hook that fails: the workunit backs off (1 minute, doubling, at most an hour),
the other workunits are assimilated meanwhile, and the admin sees the error and the attempts."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from lxml import html

from apps.projects.services import daemon_pass_run
from apps.work.domain.states import AssimilateState
from apps.work.models import Workunit
from apps.work.services import assimilator, workunits_assimilate, workunits_transition, workunits_validate
from apps.work.services.assimilator import CLAIM_LEASE, copy_outputs, retry_delay
from tests.backend.conftest import make_wu, report, results_of, send

HOOK = "tests.backend.test_assimilator_retry.flaky_hook"
FAILING: set[str] = set()  # names of the workunits whose hook raises
CALLS: list[str] = []
TAKES: dict[str, timedelta] = {}  # how long the hook runs for these workunits


class PassClock:
    """The pass's monotonic clock: a hook "takes" time by moving it on."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


CLOCK = PassClock()


class WorkerKilled(BaseException):
    """What a worker killed in the hook looks like to the pass: nothing after it runs."""


def flaky_hook(workunit, canonical_result, output_paths):
    CALLS.append(workunit.name)
    CLOCK.seconds += TAKES.get(workunit.name, timedelta(0)).total_seconds()
    if workunit.name in FAILING:
        raise RuntimeError("science database is down")
    if workunit.name.startswith("killed"):
        raise WorkerKilled
    return copy_outputs(workunit, canonical_result, output_paths)


@pytest.fixture
def hook(app):
    app.assimilator = HOOK
    app.save()
    FAILING.clear()
    CALLS.clear()
    TAKES.clear()
    CLOCK.seconds = 0.0
    yield
    FAILING.clear()
    CALLS.clear()
    TAKES.clear()


def ready(project, app, now, name: str, *, failing: bool = False) -> Workunit:
    """A workunit handed to the assimilator (errored out, so no canonical result is needed)."""
    wu = make_wu(project, app, now, name=name, create_results=False)
    Workunit.objects.filter(id=wu.id).update(assimilate_state=AssimilateState.READY)
    if failing:
        FAILING.add(name)
    return wu


def validated(project, app, version, hosts, now, name: str) -> Workunit:
    """A workunit with a canonical result from two agreeing replicas."""
    wu = make_wu(project, app, now, name=name)
    for r, h in zip(results_of(wu), hosts[:2], strict=True):
        send(r, h, version, now)
        report(r, now, output=b"result\n")
    workunits_transition(project=project, now=now)
    workunits_validate(project=project, now=now)
    return wu


def shown(page: bytes, field: str) -> str:
    """The value the workunit's admin page shows for ``field`` (an input or read-only text)."""
    (row,) = html.fromstring(page).xpath(f'//div[contains(@class, "field-{field}")]')
    inputs = row.xpath(".//input|.//textarea")
    if inputs:
        return ((inputs[0].get("value") if inputs[0].tag == "input" else inputs[0].text) or "").strip()
    return row.xpath('.//div[contains(@class, "readonly")]')[0].text_content().strip()


def test_the_wait_starts_at_a_minute_doubles_and_stops_at_an_hour():
    minutes = [retry_delay(n) / timedelta(minutes=1) for n in range(1, 9)]
    assert minutes == [1, 2, 4, 8, 16, 32, 60, 60]
    assert retry_delay(10**9) == timedelta(hours=1)


def test_workunits_whose_hook_fails_do_not_hold_up_the_others(hook, project, app, now):
    ready(project, app, now, "bad-1", failing=True)
    ready(project, app, now, "bad-2", failing=True)
    good = ready(project, app, now, "good")

    first = workunits_assimilate(project=project, now=now, limit=2)
    second = workunits_assimilate(project=project, now=now + timedelta(seconds=15), limit=2)

    assert (first.items, first.errors) == (0, 2)
    assert (second.items, second.errors) == (1, 0)
    good.refresh_from_db()
    assert good.assimilate_state == AssimilateState.DONE


def test_a_failed_workunit_keeps_its_error_attempts_and_retry_time(hook, project, app, now):
    bad = ready(project, app, now, "bad", failing=True)

    workunits_assimilate(project=project, now=now)

    bad.refresh_from_db()
    assert bad.assimilate_state == AssimilateState.READY
    assert bad.assimilate_attempts == 1
    assert bad.assimilate_error.startswith("RuntimeError: science database is down\n")
    assert "flaky_hook" in bad.assimilate_error  # where it was raised
    assert bad.assimilate_retry_time == now + timedelta(minutes=1)


def test_the_workunits_admin_page_shows_the_hooks_error_and_attempts(hook, admin_client, project, app, now):
    bad = ready(project, app, now, "bad", failing=True)
    workunits_assimilate(project=project, now=now)

    page = admin_client.get(f"/admin/work/workunit/{bad.id}/change/").content

    assert shown(page, "assimilate_error").startswith("RuntimeError: science database is down")
    assert shown(page, "assimilate_attempts") == "1"


def test_a_hook_that_fails_slowly_backs_off_from_when_it_failed(hook, project, app, now):
    bad = ready(project, app, now, "bad", failing=True)
    TAKES["bad"] = timedelta(minutes=5)  # a timeout, longer than the first wait

    workunits_assimilate(project=project, now=now, monotonic=CLOCK)

    bad.refresh_from_db()
    assert bad.assimilate_retry_time == now + timedelta(minutes=5) + timedelta(minutes=1)


def test_a_workunit_claimed_late_in_a_long_pass_gets_its_whole_lease(hook, project, app, now):
    ready(project, app, now, "slow")
    late = ready(project, app, now, "killed")  # claimed after the slow hook, then its worker dies
    TAKES["slow"] = timedelta(minutes=30)

    with pytest.raises(WorkerKilled):
        workunits_assimilate(project=project, now=now, monotonic=CLOCK)

    late.refresh_from_db()
    renewed = now + timedelta(minutes=30) + CLAIM_LEASE  # and the claim's own microseconds
    assert renewed <= late.assimilate_retry_time < renewed + timedelta(seconds=1)


def test_a_long_pass_renews_its_claims_at_most_once_per_half_lease(hook, monkeypatch, project, app, now):
    for i in range(20):
        ready(project, app, now, f"slow{i}")
        TAKES[f"slow{i}"] = timedelta(seconds=10)  # 200 s of hooks in one pass
    renewals = []
    renew = assimilator._lease_renew
    monkeypatch.setattr(assimilator, "_lease_renew", lambda *a: renewals.append(a[1]) or renew(*a))

    outcome = workunits_assimilate(project=project, now=now, monotonic=CLOCK)

    assert outcome.items == 20
    assert len(renewals) <= 200 / (CLAIM_LEASE / 2).total_seconds()


def test_a_failed_workunit_is_not_tried_again_before_its_retry_time(hook, project, app, now):
    ready(project, app, now, "bad", failing=True)
    workunits_assimilate(project=project, now=now)

    early = workunits_assimilate(project=project, now=now + timedelta(seconds=59))
    on_time = workunits_assimilate(project=project, now=now + timedelta(minutes=1))

    assert (early.errors, on_time.errors) == (0, 1)
    assert CALLS == ["bad", "bad"]


def test_each_failure_doubles_the_wait_up_to_an_hour(hook, project, app, now):
    bad = ready(project, app, now, "bad", failing=True)
    waits = []
    when = now
    for _ in range(8):
        workunits_assimilate(project=project, now=when)
        bad.refresh_from_db()
        waits.append((bad.assimilate_retry_time - when) / timedelta(minutes=1))
        when = bad.assimilate_retry_time

    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    assert bad.assimilate_attempts == 8


def test_due_retries_go_before_new_workunits(hook, project, app, now):
    new = make_wu(project, app, now, name="new", create_results=False)  # the lower id
    ready(project, app, now, "bad", failing=True)
    workunits_assimilate(project=project, now=now)
    FAILING.clear()
    Workunit.objects.filter(id=new.id).update(assimilate_state=AssimilateState.READY)

    workunits_assimilate(project=project, now=now + timedelta(minutes=1), limit=1)

    assert CALLS == ["bad", "bad"]


def test_a_workunit_whose_hook_succeeds_later_is_assimilated_normally(
    hook, project, app, version, hosts, now
):
    wu = validated(project, app, version, hosts, now, "flaky")
    FAILING.add("flaky")
    workunits_assimilate(project=project, now=now)
    FAILING.clear()
    later = now + timedelta(minutes=1)

    outcome = workunits_assimilate(project=project, now=later)

    wu.refresh_from_db()
    assert (outcome.items, outcome.errors) == (1, 0)
    assert wu.assimilate_state == AssimilateState.DONE
    assert (
        Path(wu.assimilated_path) / wu.canonical_result.output_files.get().name
    ).read_bytes() == b"result\n"
    assert (wu.assimilate_error, wu.assimilate_retry_time, wu.assimilate_attempts) == ("", None, 2)
    assert wu.transition_time == later


def test_a_workunit_whose_worker_died_in_the_hook_is_tried_again_after_the_lease(hook, project, app, now):
    wu = ready(project, app, now, "killed")
    with pytest.raises(WorkerKilled):
        workunits_assimilate(project=project, now=now)

    before_lease_ends = workunits_assimilate(project=project, now=now + CLAIM_LEASE - timedelta(seconds=1))
    with pytest.raises(WorkerKilled):
        workunits_assimilate(project=project, now=now + CLAIM_LEASE + timedelta(seconds=1))

    assert before_lease_ends.errors == 0
    assert CALLS == ["killed", "killed"]
    wu.refresh_from_db()
    assert wu.assimilate_attempts == 2


def test_the_dashboard_says_how_many_workunits_wait_to_retry_a_failed_hook(
    hook, admin_client, project, app, now
):
    ready(project, app, now, "bad", failing=True)
    ready(project, app, now, "good")
    daemon_pass_run(
        project=project, daemon="assimilator", run=lambda: workunits_assimilate(project=project, now=now)
    )
    daemon_pass_run(
        project=project,
        daemon="assimilator",
        run=lambda: workunits_assimilate(project=project, now=now + timedelta(seconds=15)),
    )

    page = admin_client.get(f"/admin/projects/project/{project.pk}/dashboard/").content.decode()

    assert "1 workunit(s) wait to retry a failed hook" in page


def test_the_dashboard_links_to_the_workunits_whose_hook_failed(hook, admin_client, project, app, now):
    ready(project, app, now, "bad", failing=True)
    ready(project, app, now, "good")
    workunits_assimilate(project=project, now=now)
    ready(project, app, now, "new")
    dashboard = html.fromstring(admin_client.get(f"/admin/projects/project/{project.pk}/dashboard/").content)
    (link,) = dashboard.xpath('//a[@id="wu-assimilate-failed"]/@href')

    listed = html.fromstring(admin_client.get(link).content)

    names = [
        a.text_content()
        for a in listed.xpath('//table[@id="result_list"]//th[contains(@class, "field-name")]//a')
    ]
    assert names == ["bad"]


def test_due_retries_take_at_most_half_a_pass_while_new_workunits_wait(hook, project, app, now):
    for i in range(4):
        ready(project, app, now, f"bad-{i}", failing=True)
    workunits_assimilate(project=project, now=now)
    for i in range(4):
        ready(project, app, now, f"new-{i}")
    CALLS.clear()

    workunits_assimilate(project=project, now=now + timedelta(minutes=1), limit=4)

    assert CALLS == ["bad-0", "bad-1", "new-0", "new-1"]
