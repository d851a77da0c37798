"""On-demand work generation: need-work signals, the bounded wait after the commit, the retry.

The wait tests use real transactions (``transaction=True``) so that "the RPC committed
before the wait" and "the wait holds no transaction" are facts checked on the database,
and the clock of the wait is replaced (a boundary), so they run instantly.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections

import apps.scheduler.services.sources.locality as locality_source
from apps.locality.generators import example_work_generator
from apps.locality.models import HostFile, LocalityFile, NeedWork
from apps.locality.need_work import need_work_signal
from apps.locality.services import locality_work_generate
from apps.locality.tasks import locality_generate_work_task
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit
from tests.locality.conftest import FakeClock, file_work, wu_file

transactional = pytest.mark.django_db(transaction=True)


@transactional
def test_wait_then_retry_sends_the_work_the_generator_made(on_demand, hosts, clock, enqueued):
    def worker(fake: FakeClock) -> None:
        if fake.calls == 2:  # the generator answers during the second poll interval
            assert NeedWork.objects.filter(handled_time__isnull=True).count() == 1  # committed
            locality_work_generate(file_id=enqueued[0], now=hosts.now)

    clock.on_sleep = worker
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=2)

    assert enqueued == [LocalityFile.objects.get(name="a.dat").id]  # after the first commit
    assert [wu_file(r.name) for r in reply.results] == ["a.dat", "a.dat"]
    assert {r.wu_name for r in reply.results} <= {"a.dat__1", "a.dat__2", "a.dat__3", "a.dat__4"}
    assert reply.delete_file_infos == ()
    assert clock.slept == pytest.approx(2 * locality_source.POLL_INTERVAL)
    signal = NeedWork.objects.get()
    assert (signal.handled_time is not None, signal.workunits_created) == (True, 4)
    assert Result.objects.filter(host__isnull=False, server_state=ServerState.IN_PROGRESS).count() == 2
    assert [m.text for m in reply.messages if m.text.startswith("Sent")] == ["Sent 2 task(s)."]
    assert "No tasks sent" not in " ".join(m.text for m in reply.messages)


@transactional
def test_other_requests_are_served_while_one_waits(on_demand, loc_app, hosts, clock, enqueued):
    file_work(on_demand, loc_app, "b.dat", 2)
    other = hosts.new(files={"b.dat": 1.0})
    outcome: dict[str, object] = {}

    def other_rpc() -> None:
        try:
            outcome["reply"] = hosts.rpc(other, jobs=1, at=hosts.now + timedelta(seconds=30))
        finally:
            connections.close_all()

    def worker(fake: FakeClock) -> None:
        if fake.calls == 1:
            thread = threading.Thread(target=other_rpc)
            thread.start()
            thread.join(timeout=20)
            outcome["finished"] = not thread.is_alive()

    clock.on_sleep = worker
    hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=1)
    assert outcome["finished"] is True
    assert [wu_file(r.name) for r in outcome["reply"].results] == ["b.dat"]


@transactional
def test_the_wait_ends_after_the_wait_period_when_no_work_appears(on_demand, hosts, clock, enqueued):
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=2)
    assert reply.results == ()
    assert clock.slept == pytest.approx(5.0)
    # Still no results after the sleep and the one additional attempt, so the
    # file is one with no results available: deleted from the host, marked files_no_work.
    assert reply.delete_file_infos == ("a.dat",)
    assert LocalityFile.objects.get(name="a.dat").files_no_work is True
    assert NeedWork.objects.get().handled_time is None  # the generator may still answer
    assert "a.dat" not in host.sticky


@transactional
def test_the_wait_is_capped(on_demand, hosts, clock, enqueued):
    on_demand.locality_scheduling_wait_period = 3600
    on_demand.save()
    hosts.project = on_demand
    hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=1)
    assert clock.slept == pytest.approx(locality_source.MAX_WAIT_SECONDS)


@transactional
def test_no_work_available_marker_skips_the_wait_and_deletes_the_file(on_demand, hosts, clock, enqueued):
    LocalityFile.objects.create(project=on_demand, name="a.dat", no_work_available=True)
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=1)
    assert clock.calls == 0
    assert not NeedWork.objects.exists()
    assert enqueued == []
    assert reply.delete_file_infos == ("a.dat",)
    assert "a.dat" not in host.sticky


@transactional
def test_no_work_available_trigger_file_skips_the_wait(on_demand, hosts, clock, enqueued, tmp_path: Path):
    on_demand.locality_trigger_dir = str(tmp_path / "locality_scheduling")
    on_demand.save()
    hosts.project = on_demand
    (tmp_path / "locality_scheduling" / "no_work_available").mkdir(parents=True)
    (tmp_path / "locality_scheduling" / "no_work_available" / "a.dat").touch()
    reply = hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=1)
    assert clock.calls == 0
    assert reply.delete_file_infos == ("a.dat",)
    assert (tmp_path / "locality_scheduling" / "files_no_work" / "a.dat").exists()


@transactional
def test_need_work_trigger_is_written_and_removed_once_work_exists(
    on_demand, hosts, clock, enqueued, tmp_path
):
    root = tmp_path / "locality_scheduling"
    on_demand.locality_trigger_dir = str(root)
    on_demand.save()
    hosts.project = on_demand
    seen: list[bool] = []

    def worker(fake: FakeClock) -> None:
        seen.append((root / "need_work" / "a.dat").exists())
        locality_work_generate(file_id=enqueued[0], now=hosts.now)

    clock.on_sleep = worker
    reply = hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=1)
    assert seen == [True]
    assert not (root / "need_work" / "a.dat").exists()
    assert len(reply.results) == 1


@transactional
def test_without_a_generator_the_wait_period_is_not_spent(on_demand, hosts, clock, enqueued):
    on_demand.locality_work_generator = ""
    on_demand.save()
    hosts.project = on_demand
    reply = hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=1)
    assert clock.calls == 0
    assert reply.delete_file_infos == ("a.dat",)


@pytest.mark.django_db
def test_inside_an_outer_transaction_the_rpc_does_not_sleep(on_demand, hosts, clock):
    reply = hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=1)
    assert clock.calls == 0
    assert reply.results == ()
    assert NeedWork.objects.filter(handled_time__isnull=True).count() == 1


@pytest.mark.django_db
def test_need_work_is_enqueued_once_after_commit_and_resent_when_stale(
    on_demand, now, enqueued, django_capture_on_commit_callbacks
):
    file = LocalityFile.objects.create(project=on_demand, name="a.dat")
    with django_capture_on_commit_callbacks(execute=True):
        assert need_work_signal(file=file, host=None, now=now) is True
        assert need_work_signal(file=file, host=None, now=now + timedelta(seconds=10)) is False
    assert enqueued == [file.id]
    with django_capture_on_commit_callbacks(execute=True):
        assert need_work_signal(file=file, host=None, now=now + timedelta(minutes=5)) is True
    assert enqueued == [file.id, file.id]
    assert NeedWork.objects.count() == 1


@pytest.mark.django_db
def test_example_generator_makes_filename_workunits_with_the_same_large_file(on_demand, now):
    file = LocalityFile.objects.create(project=on_demand, name="a.dat")
    outcome = example_work_generator(project=on_demand, file=file, now=now, batch=3, max_per_file=5)
    assert (outcome.created, outcome.exhausted) == (3, False)
    new = Workunit.objects.filter(name__in=["a.dat__1", "a.dat__2", "a.dat__3"])
    assert new.count() == 3
    assert {wu.locality_file_name for wu in new} == {"a.dat"}
    assert {ref.file.name for wu in new for ref in wu.file_refs.all()} == {"a.dat"}
    assert Result.objects.filter(workunit__in=new, server_state=ServerState.UNSENT).count() == 6
    outcome = example_work_generator(project=on_demand, file=file, now=now, batch=3, max_per_file=5)
    assert (outcome.created, outcome.exhausted) == (1, True)


@pytest.mark.django_db
def test_an_exhausted_generator_marks_no_work_available(on_demand, now, monkeypatch):
    monkeypatch.setattr("apps.locality.generators.EXAMPLE_MAX_WORKUNITS_PER_FILE", 1)
    file = LocalityFile.objects.create(project=on_demand, name="a.dat")
    NeedWork.objects.create(file=file, requested_time=now)
    outcome = locality_work_generate(file_id=file.id, now=now)
    assert outcome is not None
    assert (outcome.created, outcome.exhausted) == (0, True)
    file.refresh_from_db()
    assert file.no_work_available is True
    assert NeedWork.objects.get().handled_time == now


@pytest.mark.django_db
def test_generation_without_a_pending_signal_does_nothing(on_demand, now):
    file = LocalityFile.objects.create(project=on_demand, name="a.dat")
    assert locality_work_generate(file_id=file.id, now=now) is None
    assert Workunit.objects.count() == 1


@pytest.mark.django_db
def test_generate_task_runs_the_service(on_demand, now):
    file = LocalityFile.objects.create(project=on_demand, name="a.dat")
    NeedWork.objects.create(file=file, requested_time=now)
    assert locality_generate_work_task.apply(args=[file.id]).get() == 4
    assert HostFile.objects.count() == 0


@pytest.fixture
def eager_celery():
    from boincproj.celery import app as celery_app

    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@transactional
def test_signal_to_celery_task_to_generator_end_to_end(on_demand, hosts, clock, eager_celery):
    # The real wiring, with Celery running tasks in-process: the signal's on_commit
    # enqueues locality.generate_work, which makes the work before the first poll.
    reply = hosts.rpc(hosts.new(files={"a.dat": 1.0}), jobs=3)
    assert [wu_file(r.name) for r in reply.results] == ["a.dat", "a.dat", "a.dat"]
    assert clock.calls == 0
    assert NeedWork.objects.get().workunits_created == 4


@transactional
def test_a_file_marked_no_work_available_during_the_wait_is_deleted_in_the_same_reply(
    on_demand, hosts, clock, enqueued
):
    def generator_gives_up(fake: FakeClock) -> None:
        LocalityFile.objects.filter(name="a.dat").update(no_work_available=True)

    clock.on_sleep = generator_gives_up
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=1)
    assert clock.calls == 1
    assert reply.delete_file_infos == ("a.dat",)
    assert HostFile.objects.get(file__name="a.dat").delete_requested is True
