"""run_daemons --once, the Celery tasks, DaemonRun records and pausing per project."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from apps.core import clock
from apps.credit import tasks as credit_tasks
from apps.projects.models import DaemonRun
from apps.volunteers.models import Account
from apps.work import tasks as work_tasks
from apps.work.domain.states import AssimilateState, FileDeleteState, ServerState
from apps.work.models import Result, Workunit
from boincproj.celery import DEFAULT_SCHEDULE
from boincproj.celery import app as celery_app
from tests.backend.conftest import make_wu, report, results_of, send

pytestmark = pytest.mark.django_db


def _run_once(*args: str) -> dict[str, int]:
    out = StringIO()
    call_command("run_daemons", "--once", *args, stdout=out, stderr=StringIO())
    items = {}
    for line in out.getvalue().splitlines()[1:]:
        parts = line.split()
        if len(parts) == 4 and parts[1].isdigit():
            items[parts[0]] = int(parts[1])
    return items


def _snapshot() -> list:
    return [
        list(Workunit.objects.order_by("id").values()),
        list(Result.objects.order_by("id").values()),
        list(Account.objects.order_by("id").values("total_credit", "expavg_credit")),
    ]


def test_a_quorum_2_workunit_goes_from_created_to_assimilated_with_agreeing_results(
    project, app, version, hosts
):
    wu = make_wu(project, app, now=None, create_results=False)
    _run_once("--project", project.slug)
    now = clock.now()
    for i, r in enumerate(results_of(wu)):
        send(r, hosts[i], version, now - timedelta(minutes=5))
        report(r, now, output=b"agreed\n")
    items = _run_once()
    wu.refresh_from_db()
    assert wu.assimilate_state == AssimilateState.DONE
    assert wu.file_delete_state == FileDeleteState.DONE
    assert (project.results_dir / "wu").is_dir()
    assert all(r.granted_credit > 0 for r in results_of(wu))
    assert items["validator"] == 1
    assert items["assimilator"] == 1


def test_running_it_twice_the_second_pass_changes_nothing(project, app, version, hosts):
    wus = [make_wu(project, app, now=None, name=f"w{i}", create_results=False) for i in range(3)]
    _run_once()
    now = clock.now()
    # One workunit completes, one half-reports, one is untouched.
    for i, r in enumerate(results_of(wus[0])):
        send(r, hosts[i], version, now)
        report(r, now, output=b"x\n")
    send(results_of(wus[1])[0], hosts[0], version, now)
    report(results_of(wus[1])[0], now, output=b"y\n")
    first = _run_once()
    assert sum(first.values()) > 0
    before = _snapshot()
    second = _run_once()
    assert set(second.values()) == {0}
    assert _snapshot() == before


def test_the_table_lists_every_daemon_in_order(project):
    out = StringIO()
    call_command("run_daemons", "--once", "--max-rounds", "1", stdout=out, stderr=StringIO())
    names = [line.split()[0] for line in out.getvalue().splitlines()[1:8]]
    assert names == [
        "transitioner",
        "validator",
        "assimilator",
        "file_deleter",
        "db_purge",
        "feeder",
        "sequence_deadlines",
    ]
    assert "rounds: 1" in out.getvalue()


def test_a_task_records_a_daemon_run_per_project(project, app, now):
    make_wu(project, app, now, create_results=False)
    assert work_tasks.transition_task() == {"items": 1, "errors": 0}
    run = DaemonRun.objects.get(project=project, daemon="transitioner")
    assert (run.items, run.errors) == (1, 0)
    assert Result.objects.filter(server_state=ServerState.UNSENT).count() == 2


def test_idle_passes_refresh_one_row_instead_of_adding_rows(project):
    for _ in range(3):
        work_tasks.validate_task()
    assert DaemonRun.objects.filter(project=project, daemon="validator").count() == 1


def test_a_paused_daemon_does_not_run_for_that_project(project, app, now):
    project.paused_daemons = ["transitioner"]
    project.save()
    make_wu(project, app, now, create_results=False)
    work_tasks.transition_task()
    assert Result.objects.count() == 0
    assert not DaemonRun.objects.filter(project=project, daemon="transitioner").exists()


def test_credit_tasks_record_feeder_and_update_stats_runs(project, hosts):
    Account.objects.filter(id=hosts[0].account_id).update(
        total_credit=100, expavg_credit=50, expavg_time=1_700_000_000
    )
    credit_tasks.normalize_task()
    credit_tasks.update_stats_task()
    assert DaemonRun.objects.filter(project=project, daemon="feeder").exists()
    assert DaemonRun.objects.get(project=project, daemon="update_stats").items >= 1
    account = Account.objects.get(id=hosts[0].account_id)
    assert account.expavg_credit < 50  # decayed
    assert account.credit_history.count() == 1


def test_the_schedules_work_and_credit_task_names_are_registered():
    mine = {"work.", "credit.normalize", "credit.update_stats"}
    names = {e.task for e in DEFAULT_SCHEDULE if any(e.task.startswith(m) for m in mine)}
    assert names == {
        "work.transition",
        "work.validate",
        "work.assimilate",
        "work.file_delete",
        "work.purge",
        "work.sequence_deadlines",
        "credit.normalize",
        "credit.update_stats",
    }
    celery_app.loader.import_default_modules()  # the tasks modules a worker imports at start
    assert names <= set(celery_app.tasks)
