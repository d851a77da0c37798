"""The daemons and the scheduler RPC touching the same rows at once, on PostgreSQL.

A scheduler RPC locks its host's host_app_version rows first, then the results it reports,
then writes the host row (apps.scheduler.services). A daemon that takes those locks in another
order deadlocks with it: PostgreSQL then aborts one side, a failed RPC for the volunteer or a
failed workunit for the daemon. Each test holds an RPC at the point where it owns its locks,
lets the daemon run into them, then lets the RPC go on: both must succeed. The last one holds
the file deleter while it removes a file that a new workunit is being created with.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction

import apps.scheduler.services as scheduler_services
from apps.credit.services import credit_grant
from apps.hosts.models import Host, HostAppVersion
from apps.scheduler.services import scheduler_request_handle
from apps.work.domain.states import FileDeleteState, Outcome, ServerState, ValidateState
from apps.work.models import InputFile, Workunit
from apps.work.services import InputSpec, file_deleter, files_delete, workunits_transition, workunits_validate
from tests.backend.conftest import make_wu, refresh, report, results_of, send
from tests.credit.builders import credit_job, credit_workunit
from tests.scheduler.conftest import make_request, reported

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writer at a time"),
]

# Longer than PostgreSQL's deadlock_timeout (1 s): a daemon stuck on the RPC's locks by then
# has either waited its turn or been aborted as a deadlock victim.
HOLD_SECONDS = 2.0


def rpc_held(monkeypatch, host: Host, *, now, reports=()) -> tuple[threading.Thread, threading.Event, list]:
    """Start host's scheduler RPC in a thread; it pauses for HOLD_SECONDS once it holds the
    host's host_app_versions, before it locks the results it reports and writes anything."""
    holding = threading.Event()
    errors: list[BaseException] = []
    original = scheduler_services.results_report

    def hold_then_report(ctx):
        holding.set()
        time.sleep(HOLD_SECONDS)
        return original(ctx)

    monkeypatch.setattr(scheduler_services, "results_report", hold_then_report)
    req = make_request(
        host.account.authenticator,
        hostid=host.id,
        rpc_seqno=host.rpc_seqno + 1,
        work_req_seconds=0.0,
        cpu_req_secs=0.0,
        results=tuple(reports),
    )
    req = replace(req, host_info=replace(req.host_info, host_cpid=host.host_cpid or "cpid"))

    def run() -> None:
        try:
            scheduler_request_handle(project=host.project, req=req, now=now)
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    assert holding.wait(20), "the RPC never reached its reports"
    return thread, holding, errors


def test_validator_granting_credit_to_a_host_during_its_rpc_waits_for_it(
    monkeypatch, project, app, version, hosts, now
):
    wu = make_wu(project, app, now)
    for r, h in zip(results_of(wu), hosts[:2], strict=True):
        send(r, h, version, now)
        report(r, now, output=b"same\n")
    workunits_transition(project=project, now=now)

    rpc, _, rpc_errors = rpc_held(monkeypatch, hosts[0], now=now + timedelta(minutes=1))
    outcome = workunits_validate(project=project, now=now + timedelta(minutes=1))
    rpc.join(30)

    assert rpc_errors == []
    assert outcome.errors == 0
    assert [r.validate_state for r in results_of(wu)] == [ValidateState.VALID, ValidateState.VALID]
    (host,) = refresh(hosts[0])
    assert host.total_credit > 0


def test_credit_granted_to_a_host_during_its_rpc_waits_for_it(monkeypatch, project, app, version, hosts, now):
    # credit_grant on its own (the validator locks the host_app_versions before it is called).
    HostAppVersion.objects.create(host=hosts[0], app=app, app_version=version)
    job = credit_job(hosts[0], version, now)
    workunit = credit_workunit(app)

    rpc, _, rpc_errors = rpc_held(monkeypatch, hosts[0], now=now)
    with transaction.atomic():
        [credit] = credit_grant(workunit=workunit, jobs=[job], now=now)
    rpc.join(30)

    assert rpc_errors == []
    (host,) = refresh(hosts[0])
    assert host.total_credit == pytest.approx(credit.granted_credit)


def test_validator_and_a_host_reporting_a_result_again_during_validation_both_succeed(
    monkeypatch, project, app, version, hosts, now
):
    # A client whose reply was lost reports the same result again in its next RPC.
    wu = make_wu(project, app, now)
    first, second = results_of(wu)
    for r, h in ((first, hosts[0]), (second, hosts[1])):
        send(r, h, version, now)
        report(r, now, output=b"same\n")
    workunits_transition(project=project, now=now)

    at = now + timedelta(minutes=1)
    rpc, _, rpc_errors = rpc_held(monkeypatch, hosts[0], now=at, reports=[reported(first.name)])
    outcome = workunits_validate(project=project, now=at)
    rpc.join(30)

    assert rpc_errors == []
    assert outcome.errors == 0
    assert [r.validate_state for r in results_of(wu)] == [ValidateState.VALID, ValidateState.VALID]


def test_transitioner_timing_out_a_result_its_host_is_reporting_waits_for_the_rpc(
    monkeypatch, project, app, version, hosts, now
):
    wu = make_wu(project, app, now)
    late, other = results_of(wu)
    send(late, hosts[0], version, now, delay=3600)
    send(other, hosts[1], version, now)
    later = now + timedelta(hours=3)  # past the deadline and the one-hour grace period
    workunits_transition(project=project, now=now)

    rpc, _, rpc_errors = rpc_held(monkeypatch, hosts[0], now=later, reports=[reported(late.name)])
    outcome = workunits_transition(project=project, now=later)
    rpc.join(30)

    assert rpc_errors == []
    assert outcome.errors == 0
    (late,) = refresh(late)
    assert late.server_state == ServerState.OVER
    assert late.outcome in (Outcome.SUCCESS, Outcome.NO_REPLY)


def test_create_work_reusing_an_input_file_the_deleter_is_removing_copies_it_in_again(
    monkeypatch, project, app, now, tmp_path
):
    source = tmp_path / "in.dat"
    source.write_bytes(b"input\n")
    first = make_wu(project, app, now, name="first", inputs=[InputSpec(path=source)])
    Workunit.objects.filter(id=first.id).update(file_delete_state=FileDeleteState.READY)
    deciding, errors = threading.Event(), []
    unlink = file_deleter._unlink

    def unlink_slowly(path):
        deciding.set()  # the file's row is locked and its deletion decided
        time.sleep(HOLD_SECONDS)
        return unlink(path)

    monkeypatch.setattr(file_deleter, "_unlink", unlink_slowly)

    def delete() -> None:
        try:
            files_delete(project=project, now=now)
        except BaseException as exc:  # surfaced by the test
            errors.append(exc)
        finally:
            connections.close_all()

    deleter = threading.Thread(target=delete)
    deleter.start()
    assert deciding.wait(20)
    make_wu(project, app, now, name="second", inputs=[InputSpec(path=source)])
    deleter.join(30)

    assert errors == []
    assert (project.download_dir / "in.dat").read_bytes() == b"input\n"
    assert InputFile.objects.get(name="in.dat").file_delete_state == FileDeleteState.INIT
