"""Adaptive replication and reliable hosts through the scheduler RPC, the transitioner and the validator."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from apps.applications.models import AppVersion
from apps.core import clock
from apps.hosts.models import Host, HostAppVersion
from apps.work.domain.states import Outcome, ServerState, ValidateState
from apps.work.models import Result, Workunit
from apps.work.services import workunits_transition, workunits_validate
from tests.backend.conftest import report
from tests.scheduler.conftest import make_jobs, make_request, reported, rpc

pytestmark = pytest.mark.django_db

# consecutive_valid so long that the 1/consecutive_valid draw to replicate never comes up
LONG_RECORD = 10**9


@pytest.fixture
def adaptive_app(cpu_app):
    cpu_app.adaptive_replication = True
    cpu_app.min_quorum = 2
    cpu_app.target_nresults = 2
    cpu_app.save()
    return cpu_app


def new_host(client, project, account, name: str = "a") -> int:
    """A host made by an RPC that asks for no work; returns its id."""
    req = make_request(account.authenticator, work_req_seconds=0.0, cpu_req_secs=0.0)
    info = replace(req.host_info, host_cpid=f"cpid-{name}", domain_name=name)
    return rpc(client, project, replace(req, host_info=info)).hostid


def record(host_id: int, app, **fields) -> HostAppVersion:
    version = AppVersion.objects.get(app=app)
    hav, _ = HostAppVersion.objects.update_or_create(
        host_id=host_id, app=app, app_version=version, defaults=fields
    )
    return hav


def ask(client, project, account, host_id: int, seqno: int = 1, **kw):
    req = make_request(
        account.authenticator, hostid=host_id, rpc_seqno=seqno, cpu_req_secs=1.0, work_req_seconds=1.0
    )
    return rpc(client, project, replace(req, **kw))


def test_an_adaptive_apps_workunits_start_with_one_result(project, adaptive_app):
    [wu] = make_jobs(project, adaptive_app, 1)
    assert (wu.min_quorum, wu.target_nresults) == (1, 1)
    assert Result.objects.filter(workunit=wu).count() == 1


def test_a_host_without_a_record_gets_its_workunit_replicated(client, project, account, adaptive_app):
    [wu] = make_jobs(project, adaptive_app, 1)
    host_id = new_host(client, project, account)
    reply = ask(client, project, account, host_id)
    assert len(reply.results) == 1
    wu.refresh_from_db()
    assert (wu.min_quorum, wu.target_nresults) == (2, 2)
    workunits_transition(project=project, now=clock.now() + timedelta(seconds=1))
    assert Result.objects.filter(workunit=wu).count() == 2


def test_nine_consecutive_valid_results_are_not_enough_for_trust(client, project, account, adaptive_app):
    [wu] = make_jobs(project, adaptive_app, 1)
    host_id = new_host(client, project, account)
    record(host_id, adaptive_app, consecutive_valid=9)
    ask(client, project, account, host_id)
    wu.refresh_from_db()
    assert wu.target_nresults == 2


def test_a_trusted_host_runs_the_job_alone(client, project, account, adaptive_app):
    [wu] = make_jobs(project, adaptive_app, 1)
    host_id = new_host(client, project, account)
    record(host_id, adaptive_app, consecutive_valid=LONG_RECORD)
    reply = ask(client, project, account, host_id)
    assert len(reply.results) == 1
    wu.refresh_from_db()
    assert (wu.min_quorum, wu.target_nresults) == (1, 1)
    workunits_transition(project=project, now=clock.now() + timedelta(seconds=1))
    assert Result.objects.filter(workunit=wu).count() == 1


def test_a_fixed_quorum_app_is_replicated_whatever_the_record(client, project, account, cpu_app):
    cpu_app.min_quorum = cpu_app.target_nresults = 2
    cpu_app.save()
    [wu] = make_jobs(project, cpu_app, 1)
    assert Result.objects.filter(workunit=wu).count() == 2


def test_an_unreplicated_result_is_validated_alone_and_credited(client, project, account, adaptive_app):
    [wu] = make_jobs(project, adaptive_app, 1)
    host_id = new_host(client, project, account)
    record(host_id, adaptive_app, consecutive_valid=LONG_RECORD)
    ask(client, project, account, host_id)
    [result] = Result.objects.filter(workunit=wu)
    later = clock.now() + timedelta(hours=1)
    report(result, later, output=b"42\n")
    workunits_transition(project=project, now=later)
    workunits_validate(project=project, now=later)
    wu.refresh_from_db()
    result.refresh_from_db()
    assert wu.canonical_result_id == result.id
    assert result.validate_state == ValidateState.VALID
    assert result.granted_credit > 0
    # Never compared: the trusted record neither grows nor ends.
    assert HostAppVersion.objects.get(host_id=host_id).consecutive_valid == LONG_RECORD


def test_an_error_result_ends_the_trust_at_once(client, project, account, adaptive_app):
    make_jobs(project, adaptive_app, 2)
    host_id = new_host(client, project, account)
    record(host_id, adaptive_app, consecutive_valid=LONG_RECORD)
    first = ask(client, project, account, host_id)
    [sent] = first.results
    ask(client, project, account, host_id, seqno=2, results=(reported(sent.name, state=3, exit_status=1),))
    assert HostAppVersion.objects.get(host_id=host_id).consecutive_valid == 0
    # The next job it gets is replicated.
    second = Result.objects.filter(host_id=host_id).exclude(name=sent.name).get()
    assert second.workunit.target_nresults == 2


def test_a_timed_out_result_ends_the_trust(client, project, account, adaptive_app):
    make_jobs(project, adaptive_app, 1)
    host_id = new_host(client, project, account)
    record(host_id, adaptive_app, consecutive_valid=LONG_RECORD)
    ask(client, project, account, host_id)
    workunits_transition(project=project, now=clock.now() + timedelta(days=30))
    assert HostAppVersion.objects.get(host_id=host_id).consecutive_valid == 0


def test_a_trusted_host_whose_output_disagrees_loses_its_trust(client, project, account, adaptive_app):
    [wu] = make_jobs(project, adaptive_app, 1)
    bad = new_host(client, project, account, "bad")
    record(bad, adaptive_app, consecutive_valid=20)
    wu.min_quorum = wu.target_nresults = 2  # this job was drawn for comparison
    wu.save()
    ask(client, project, account, bad)
    later = clock.now() + timedelta(hours=1)
    for name in ("h1", "h2"):  # the second breaks the tie
        workunits_transition(project=project, now=later)
        ask(client, project, account, new_host(client, project, account, name))
        for r in Result.objects.filter(workunit=wu, server_state=ServerState.IN_PROGRESS):
            report(r, later, output=b"wrong\n" if r.host_id == bad else b"42\n")
        workunits_transition(project=project, now=later)
        workunits_validate(project=project, now=later)
    assert Result.objects.get(workunit=wu, host_id=bad).validate_state == ValidateState.INVALID
    assert HostAppVersion.objects.get(host_id=bad).consecutive_valid == 0


# --- reliable hosts and accelerated retries ------------------------------------------------


@pytest.fixture
def retries(project):
    project.reliable_on_priority = 5
    project.reliable_reduced_delay_bound = 0.5
    project.save()
    return project


def retry_job(project, app):
    [wu] = make_jobs(project, app, 1)
    Result.objects.filter(workunit=wu).update(priority=5)
    return wu


def test_a_retry_goes_to_a_reliable_host_with_the_reduced_deadline(client, retries, account, cpu_app):
    wu = retry_job(retries, cpu_app)
    host_id = new_host(client, retries, account)
    record(host_id, cpu_app, consecutive_valid=12)
    reply = ask(client, retries, account, host_id)
    [sent] = reply.results
    result = Result.objects.get(name=sent.name)
    assert (result.report_deadline - result.sent_time).total_seconds() == pytest.approx(wu.delay_bound * 0.5)


def test_a_host_not_reliable_gets_no_retry_while_a_reliable_one_is_active(client, retries, account, cpu_app):
    retry_job(retries, cpu_app)
    reliable_host = new_host(client, retries, account, "reliable")
    record(reliable_host, cpu_app, consecutive_valid=12)
    newcomer = new_host(client, retries, account, "new")
    reply = ask(client, retries, account, newcomer)
    assert reply.results == ()


def test_a_host_not_reliable_gets_a_retry_when_no_reliable_host_is_active(client, retries, account, cpu_app):
    wu = retry_job(retries, cpu_app)
    newcomer = new_host(client, retries, account)
    reply = ask(client, retries, account, newcomer)
    [sent] = reply.results
    result = Result.objects.get(name=sent.name)
    assert (result.report_deadline - result.sent_time).total_seconds() == pytest.approx(wu.delay_bound)


def test_a_reliable_host_gone_for_more_than_a_day_does_not_hold_retries_back(
    client, retries, account, cpu_app
):
    retry_job(retries, cpu_app)
    gone = new_host(client, retries, account, "gone")
    record(gone, cpu_app, consecutive_valid=12)
    Host.objects.filter(id=gone).update(rpc_time=clock.now() - timedelta(days=2))
    newcomer = new_host(client, retries, account, "new")
    assert len(ask(client, retries, account, newcomer).results) == 1


def test_a_slow_host_is_not_reliable(client, retries, account, cpu_app):
    retries.reliable_max_avg_turnaround = 3600
    retries.save()
    retry_job(retries, cpu_app)
    fast = new_host(client, retries, account, "fast")
    record(fast, cpu_app, consecutive_valid=12, turnaround_n=20, turnaround_avg=1800)
    slow = new_host(client, retries, account, "slow")
    record(slow, cpu_app, consecutive_valid=12, turnaround_n=20, turnaround_avg=7200)
    assert ask(client, retries, account, slow).results == ()
    assert len(ask(client, retries, account, fast).results) == 1


def test_a_retry_after_a_timeout_is_raised_by_reliable_priority_on_over(project, account, cpu_app):
    project.reliable_priority_on_over = 5
    project.save()
    [wu] = make_jobs(project, cpu_app, 1)
    now = clock.now()
    Result.objects.filter(workunit=wu).update(
        server_state=ServerState.IN_PROGRESS, sent_time=now, report_deadline=now + timedelta(seconds=10)
    )
    workunits_transition(project=project, now=now + timedelta(days=1))
    retry = Result.objects.get(workunit=wu, server_state=ServerState.UNSENT)
    assert retry.priority == 5
    assert Result.objects.get(workunit=wu, outcome=Outcome.NO_REPLY)


def test_no_boost_after_an_error_with_reliable_priority_on_over_except_error(project, account, cpu_app):
    project.reliable_priority_on_over_except_error = 5
    project.save()
    cpu_app.max_error_results = 3
    cpu_app.save()
    [wu] = make_jobs(project, cpu_app, 1)
    now = clock.now()
    Result.objects.filter(workunit=wu).update(
        server_state=ServerState.OVER, outcome=Outcome.CLIENT_ERROR, exit_status=1, received_time=now
    )
    Workunit.objects.filter(id=wu.id).update(transition_time=now)
    workunits_transition(project=project, now=now)
    assert Result.objects.get(workunit=wu, server_state=ServerState.UNSENT).priority == 0


def test_the_tail_of_a_batch_is_raised_to_reliable_on_priority(retries, cpu_app):
    retries.batch_accel_fraction = 0.1
    retries.save()
    wus = make_jobs(retries, cpu_app, 20, batch=7)
    for wu in wus[:-2]:
        r = Result.objects.get(workunit=wu)
        Workunit.objects.filter(id=wu.id).update(canonical_result=r)
        Result.objects.filter(id=r.id).update(server_state=ServerState.OVER, outcome=Outcome.SUCCESS)
    workunits_transition(project=retries, now=clock.now())
    tail = Result.objects.filter(workunit__in=wus[-2:])
    assert [r.priority for r in tail] == [5, 5]


def test_a_batch_not_yet_in_its_tail_keeps_its_priority(retries, cpu_app):
    retries.batch_accel_fraction = 0.1
    retries.save()
    wus = make_jobs(retries, cpu_app, 20, batch=7)
    for wu in wus[:-3]:
        Workunit.objects.filter(id=wu.id).update(canonical_result=Result.objects.get(workunit=wu))
    workunits_transition(project=retries, now=clock.now())
    assert {r.priority for r in Result.objects.filter(workunit__in=wus[-3:])} == {0}
