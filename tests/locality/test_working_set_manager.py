"""The working-set manager service and its Celery task (N/M files)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from apps.hosts.models import Host
from apps.locality import services
from apps.locality.models import HostFile, LocalityFile, NeedWork
from apps.locality.services import working_set_update
from apps.locality.tasks import locality_working_set_task
from apps.projects.models import DaemonRun
from apps.projects.services import project_create
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.factories import HostFactory
from tests.locality.conftest import file_work

pytestmark = pytest.mark.django_db


def active_hosts(project, n: int, now) -> None:
    for _ in range(n):
        HostFactory(project=project, rpc_time=now - timedelta(hours=1))


def in_set(project) -> set[str]:
    return set(
        LocalityFile.objects.filter(project=project, in_working_set=True).values_list("name", flat=True)
    )


def test_files_with_work_get_rows_and_the_set_has_about_n_over_m_files(loc_project, loc_app, now):
    for i in range(8):
        file_work(loc_project, loc_app, f"f{i}.dat", 1)
    active_hosts(loc_project, 7, now)  # 7 hosts // target_nresults 2 = 3 files
    HostFactory(project=loc_project, rpc_time=now - timedelta(days=3))  # not active
    result = working_set_update(project=loc_project, now=now)
    assert result.files_created == 8
    assert result.target_size == 3
    assert in_set(loc_project) == {"f0.dat", "f1.dat", "f2.dat"}


def test_a_file_marked_no_work_is_dropped_and_replaced(loc_project, loc_app, now):
    for name in ("a.dat", "b.dat", "c.dat"):
        file_work(loc_project, loc_app, name, 1)
    active_hosts(loc_project, 4, now)
    working_set_update(project=loc_project, now=now)
    assert in_set(loc_project) == {"a.dat", "b.dat"}
    Result.objects.filter(workunit__locality_file_name="a.dat").update(server_state=ServerState.OVER)
    LocalityFile.objects.filter(name="a.dat").update(files_no_work=True, no_work_since=now)
    result = working_set_update(project=loc_project, now=now)
    assert (result.removed, result.added) == (("a.dat",), ("c.dat",))
    assert in_set(loc_project) == {"b.dat", "c.dat"}


def test_a_file_is_added_back_when_new_work_appears(loc_project, loc_app, now):
    file_work(loc_project, loc_app, "a.dat", 1)
    file_work(loc_project, loc_app, "b.dat", 1)
    active_hosts(loc_project, 4, now)
    Result.objects.filter(workunit__locality_file_name="a.dat").update(server_state=ServerState.OVER)
    LocalityFile.objects.bulk_create(
        [LocalityFile(project=loc_project, name="a.dat", files_no_work=True, no_work_since=now)]
    )
    working_set_update(project=loc_project, now=now)
    assert in_set(loc_project) == {"b.dat"}
    file_work(loc_project, loc_app, "a.dat", 1, start=1)  # the generator made more
    result = working_set_update(project=loc_project, now=now)
    assert result.cleared_no_work == ("a.dat",)
    assert in_set(loc_project) == {"a.dat", "b.dat"}
    assert LocalityFile.objects.get(name="a.dat").files_no_work is False


def test_the_set_shrinks_to_n_over_m_keeping_the_file_hosts_are_on(loc_project, loc_app, now):
    for name in ("a.dat", "b.dat", "c.dat"):
        file_work(loc_project, loc_app, name, 1)
    active_hosts(loc_project, 6, now)
    working_set_update(project=loc_project, now=now)
    assert in_set(loc_project) == {"a.dat", "b.dat", "c.dat"}
    holder = Host.objects.first()
    HostFile.objects.create(
        host=holder, file=LocalityFile.objects.get(name="b.dat"), first_seen=now, last_seen=now
    )
    Host.objects.exclude(pk=holder.pk).update(rpc_time=now - timedelta(days=3))  # N = 1: 1 // 2 -> 1 file
    result = working_set_update(project=loc_project, now=now)
    assert result.target_size == 1
    assert in_set(loc_project) == {"b.dat"}
    assert result.removed == ("a.dat", "c.dat")


def test_a_second_pass_changes_nothing(loc_project, loc_app, now):
    for name in ("a.dat", "b.dat"):
        file_work(loc_project, loc_app, name, 1)
    active_hosts(loc_project, 2, now)
    working_set_update(project=loc_project, now=now)
    assert working_set_update(project=loc_project, now=now).changes == 0


def test_boinc_triggers_are_read_and_cleared(loc_project, loc_app, now, tmp_path):
    root = tmp_path / "ls"
    loc_project.locality_trigger_dir = str(root)
    loc_project.save()
    file_work(loc_project, loc_app, "a.dat", 1)
    file_work(loc_project, loc_app, "b.dat", 1)
    (root / "no_work_available").mkdir(parents=True)
    (root / "no_work_available" / "b.dat").touch()
    (root / "files_no_work").mkdir()
    (root / "files_no_work" / "a.dat").touch()
    LocalityFile.objects.create(project=loc_project, name="a.dat", files_no_work=True)
    working_set_update(project=loc_project, now=now)
    assert LocalityFile.objects.get(name="b.dat").no_work_available is True
    assert not (root / "files_no_work" / "a.dat").exists()  # a.dat has work: marker was stale


def test_signals_answered_through_trigger_files_are_closed_and_old_ones_purged(loc_project, loc_app, now):
    file_work(loc_project, loc_app, "a.dat", 1)
    a = LocalityFile.objects.create(project=loc_project, name="a.dat")
    b = LocalityFile.objects.create(project=loc_project, name="b.dat")
    NeedWork.objects.create(file=a, requested_time=now)
    NeedWork.objects.create(
        file=b, requested_time=now - timedelta(days=30), handled_time=now - timedelta(days=20)
    )
    result = working_set_update(project=loc_project, now=now)
    assert (result.signals_closed, result.signals_purged) == (1, 1)
    assert NeedWork.objects.get().handled_time == now


def test_the_task_runs_every_locality_project_and_records_a_daemon_run(loc_project, loc_app, now):
    file_work(loc_project, loc_app, "a.dat", 1)
    Host.objects.all().delete()
    assert locality_working_set_task() >= 1
    run = DaemonRun.objects.get(project=loc_project, daemon="working_set")
    assert "working set 1/1" in run.message


def test_a_paused_manager_does_nothing(loc_project, loc_app):
    loc_project.paused_daemons = ["working_set"]
    loc_project.save()
    file_work(loc_project, loc_app, "a.dat", 1)
    assert locality_working_set_task() == 0
    assert not LocalityFile.objects.exists()


def test_a_project_whose_pass_fails_does_not_stop_the_others(loc_project, loc_app, monkeypatch):
    broken = project_create(slug="broken", name="Broken", locality_scheduling=True).project
    file_work(loc_project, loc_app, "a.dat", 1)
    real_pass = services.working_set_update

    def failing_for_broken(*, project, now):
        if project.pk == broken.pk:
            raise RuntimeError("trigger directory unreadable")
        return real_pass(project=project, now=now)

    monkeypatch.setattr(services, "working_set_update", failing_for_broken)
    locality_working_set_task()
    failed = DaemonRun.objects.get(project=broken, daemon="working_set")
    assert (failed.errors, "trigger directory unreadable" in failed.message) == (1, True)
    assert LocalityFile.objects.filter(project=loc_project, name="a.dat", in_working_set=True).exists()
