"""The retry after the on-demand wait: what it sends, deletes and marks, and its locks.

A host holding X with no results for X triggers work for X, sleeps N seconds,
and makes one additional attempt; a file still without results is then one with no
results available. Real transactions throughout (``transaction=True``), as in
``test_on_demand``; the wait's clock is replaced.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections

import apps.scheduler.services.sources.locality as locality_source
from apps.applications.models import AppVersion
from apps.hosts.models import HostAppVersion
from apps.locality.models import HostFile, LocalityFile
from apps.locality.services import locality_work_generate
from apps.scheduler.services.dispatch import Dispatcher
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit
from tests.locality.conftest import FakeClock, file_work, volunteer, wu_file

transactional = pytest.mark.django_db(transaction=True)


def generator_answers_at_first_sleep(clock: FakeClock, enqueued: list[int], hosts) -> None:
    def worker(fake: FakeClock) -> None:
        if fake.calls == 1:
            locality_work_generate(file_id=enqueued[0], now=hosts.now)

    clock.on_sleep = worker


# --- finding 1: no other large file before the wait -------------------------------------------


@transactional
def test_a_host_waiting_for_its_file_is_not_sent_another_large_file(
    on_demand, loc_app, hosts, clock, enqueued
):
    file_work(on_demand, loc_app, "b.dat", 3)  # another file with work, in reach of new_files()
    generator_answers_at_first_sleep(clock, enqueued, hosts)
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=1)
    assert [wu_file(r.name) for r in reply.results] == ["a.dat"]
    assert set(host.sticky) == {"a.dat"}
    assert sum(host.downloads.values()) == 0
    assert not HostFile.objects.filter(file__name="b.dat").exists()


@transactional
def test_after_a_fruitless_wait_the_host_is_started_on_another_file(
    on_demand, loc_app, hosts, clock, enqueued
):
    file_work(on_demand, loc_app, "b.dat", 3)
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=1)
    assert clock.slept == pytest.approx(5.0)
    assert [wu_file(r.name) for r in reply.results] == ["b.dat"]
    assert reply.delete_file_infos == ("a.dat",)
    assert set(host.sticky) == {"b.dat"}
    assert [m.text for m in reply.messages if m.text.startswith("Sent")] == ["Sent 1 task(s)."]


@pytest.mark.django_db
def test_inside_an_outer_transaction_the_new_file_is_still_sent(on_demand, loc_app, hosts, clock):
    # No wait is possible there: the host is started on another file, as before the wait.
    file_work(on_demand, loc_app, "b.dat", 3)
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=1)
    assert clock.calls == 0
    assert [wu_file(r.name) for r in reply.results] == ["b.dat"]
    assert reply.delete_file_infos == ()


# --- finding 2: after the wait, no results available ------------------------------------------


@transactional
def test_a_file_in_progress_elsewhere_is_kept_but_marked_after_the_wait(on_demand, hosts, clock, enqueued):
    Result.objects.update(server_state=ServerState.IN_PROGRESS)  # a replica may still fail
    host = hosts.new(files={"a.dat": 1.0})
    reply = hosts.rpc(host, jobs=1)
    assert clock.slept == pytest.approx(5.0)
    assert reply.delete_file_infos == ()
    assert "a.dat" in host.sticky
    assert LocalityFile.objects.get(name="a.dat").files_no_work is True


@transactional
def test_the_next_rpc_after_a_fruitless_wait_does_not_ask_again(on_demand, hosts, clock, enqueued):
    host = hosts.new(files={"a.dat": 1.0})
    hosts.rpc(host, jobs=1)
    slept = clock.slept
    reply = hosts.rpc(host, jobs=1)  # the host no longer reports a.dat
    assert (clock.slept, reply.delete_file_infos, host.sticky) == (slept, (), {})


# --- finding 6: the retry takes the RPC's locks -----------------------------------------------


@transactional
def test_the_retry_rereads_the_host_app_version_it_writes(on_demand, loc_app, hosts, clock, enqueued):
    host = hosts.new(files={"a.dat": 1.0})
    hosts.rpc(host, jobs=0)  # the host is known; no work asked for
    hav = HostAppVersion.objects.create(
        host_id=host.hostid,
        app=loc_app,
        app_version=AppVersion.objects.get(app=loc_app),
        consecutive_valid=3,
    )

    def worker(fake: FakeClock) -> None:
        # Another RPC of the host reports a valid result during the wait...
        HostAppVersion.objects.filter(pk=hav.pk).update(consecutive_valid=4)
        # ...and the generator answers.
        locality_work_generate(file_id=enqueued[0], now=hosts.now)

    clock.on_sleep = worker
    reply = hosts.rpc(host, jobs=1)
    assert [wu_file(r.name) for r in reply.results] == ["a.dat"]
    hav.refresh_from_db()
    assert (hav.consecutive_valid, hav.n_jobs_today) == (4, 1)


@transactional
def test_the_retry_keeps_one_result_per_user_per_workunit_across_hosts(
    on_demand, loc_app, hosts, enqueued, monkeypatch
):
    """Two hosts of one user wait for a.dat; the first one's retry sends a replica of the
    new workunit, and the second host's RPC runs before that retry commits. It must wait
    for the user's lock, then see the first replica and not take the second."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (SQLite runs one writing transaction at a time)")
    on_demand.one_result_per_user_per_wu = True
    on_demand.save()
    hosts.project = on_demand
    user = volunteer(on_demand, "u")
    first = hosts.new(user, files={"a.dat": 1.0})
    second = hosts.new(user, files={"a.dat": 1.0})
    clock = FakeClock()
    monkeypatch.setattr(locality_source, "monotonic", clock.monotonic)

    def generator(seconds: float) -> None:
        clock.t += seconds
        if Result.objects.filter(server_state=ServerState.UNSENT).exists():
            return
        # 32 workunits this host cannot take (error_mask), 63 results: the first retry's
        # 64-row locked window then holds only the first replica of the good workunit,
        # so row locks (skipped, not waited on) cannot keep the second host off the other.
        bad = file_work(on_demand, loc_app, "a.dat", 32, start=1)
        Workunit.objects.filter(id__in=[w.id for w in bad]).update(error_mask=1)
        Result.objects.filter(workunit=bad[0]).order_by("id").first().delete()
        file_work(on_demand, loc_app, "a.dat", 1, start=50)

    monkeypatch.setattr(locality_source, "sleep", generator)
    in_retry = threading.Event()
    real_retry, real_flush = locality_source._retry_files, Dispatcher.flush
    outcome: dict[str, object] = {}

    def retry(*args, **kwargs):
        in_retry.set()
        try:
            return real_retry(*args, **kwargs)
        finally:
            in_retry.clear()

    def second_rpc() -> None:
        try:
            outcome["reply"] = hosts.rpc(second, jobs=1, at=hosts.now + timedelta(seconds=30))
        finally:
            connections.close_all()

    def flush(self: Dispatcher) -> None:
        real_flush(self)
        if in_retry.is_set() and self.ctx.sent and threading.current_thread() is threading.main_thread():
            thread = threading.Thread(target=second_rpc)
            thread.start()
            thread.join(timeout=3)  # long enough to finish when nothing holds it back
            outcome["thread"] = thread

    monkeypatch.setattr(locality_source, "_retry_files", retry)
    monkeypatch.setattr(Dispatcher, "flush", flush)
    reply = hosts.rpc(first, jobs=1)
    outcome["thread"].join(timeout=30)
    assert [r.wu_name for r in reply.results] == ["a.dat__050"]
    assert [r.wu_name for r in outcome["reply"].results] != ["a.dat__050"]
    assert (
        Result.objects.filter(
            account=user, workunit__name="a.dat__050", server_state=ServerState.IN_PROGRESS
        ).count()
        == 1
    )
