"""Limits and fairness: quotas, in-progress caps, replicas, deadlines, feasibility."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from apps.core import clock
from apps.hosts.models import HostAppVersion
from apps.protocol import ClientAppVersion
from apps.work.models import Result
from tests.scheduler.conftest import GPU, PLATFORM, make_jobs, make_request, reported, rpc

pytestmark = pytest.mark.django_db


def big_request(account, **kw):
    return make_request(account.authenticator, cpu_req_secs=100000.0, work_req_seconds=100000.0, **kw)


def test_per_rpc_cap_is_cpus_times_max_wus_to_send(client, project, account, cpu_app):
    project.max_wus_to_send = 2
    project.save()
    make_jobs(project, cpu_app, 30)
    reply = rpc(client, project, big_request(account))
    assert len(reply.results) == 8  # 4 CPUs × 2


def test_app_max_jobs_in_progress_caps_the_host(client, project, account, cpu_app):
    cpu_app.max_jobs_in_progress = 3
    cpu_app.save()
    make_jobs(project, cpu_app, 30)
    first = rpc(client, project, big_request(account))
    second = rpc(client, project, big_request(account, hostid=first.hostid, rpc_seqno=1))
    assert (len(first.results), len(second.results)) == (3, 0)
    assert [m.text for m in second.messages] == [
        "No tasks sent: This computer has reached a limit on tasks in progress."
    ]


def test_daily_quota_stops_sending_and_says_so(client, project, account, cpu_app):
    project.daily_result_quota = 2  # two jobs per CPU per day: 8 for this 4-CPU host
    project.save()
    make_jobs(project, cpu_app, 30)
    first = rpc(client, project, big_request(account))
    second = rpc(client, project, big_request(account, hostid=first.hostid, rpc_seqno=1))
    assert (len(first.results), len(second.results)) == (8, 0)
    assert any("daily quota" in m.text for m in second.messages)


def test_daily_quota_starts_afresh_each_day_and_holds_all_day(client, project, account, cpu_app, monkeypatch):
    project.daily_result_quota = 2  # 8 jobs a day for this 4-CPU host
    project.save()
    make_jobs(project, cpu_app, 40)
    day1 = datetime(2026, 3, 1, 10, tzinfo=UTC)
    sent = []
    for seqno, when in enumerate([day1, day1 + timedelta(days=1), day1 + timedelta(days=1, hours=2)]):
        monkeypatch.setattr(clock, "now", lambda when=when: when)
        hostid = sent[0].hostid if sent else 0
        sent.append(rpc(client, project, big_request(account, hostid=hostid, rpc_seqno=seqno)))
    assert [len(r.results) for r in sent] == [8, 8, 0]


def test_the_daily_quota_message_ignores_versions_for_resources_not_asked_for(
    client, project, account, mixed_app
):
    project.daily_result_quota = 1
    project.save()
    make_jobs(project, mixed_app, 10)
    idle_gpu = replace(GPU, req_secs=0.0, req_instances=0.0)
    first = rpc(client, project, big_request(account, coprocs=(idle_gpu,)))
    second = rpc(client, project, big_request(account, hostid=first.hostid, rpc_seqno=1, coprocs=(idle_gpu,)))
    assert first.results
    assert not second.results
    assert any("daily quota" in m.text for m in second.messages)


def test_a_new_day_restarts_the_count_of_a_version_not_offered_in_its_first_request(
    client, project, account, mixed_app, monkeypatch
):
    project.daily_result_quota = 1  # one GPU job a day on this one-GPU host
    project.save()
    make_jobs(project, mixed_app, 20)
    gpu_ask = {"cpu_req_secs": 0.0, "work_req_seconds": 3600.0, "coprocs": (replace(GPU, req_secs=3600.0),)}
    day1 = datetime(2026, 3, 1, 10, tzinfo=UTC)
    asks = [  # the GPU is missing from the new day's first request (driver reinstalled, say)
        (day1, gpu_ask),
        (day1 + timedelta(hours=14, minutes=30), {"cpu_req_secs": 100.0}),
        (day1 + timedelta(hours=16), gpu_ask),
    ]
    replies = []
    for seqno, (when, ask) in enumerate(asks):
        monkeypatch.setattr(clock, "now", lambda when=when: when)
        hostid = replies[0].hostid if replies else 0
        replies.append(
            rpc(client, project, make_request(account.authenticator, hostid=hostid, rpc_seqno=seqno, **ask))
        )
    assert [[r.plan_class for r in reply.results] for reply in replies] == [["cuda"], [""], ["cuda"]]


def test_crash_reduces_the_daily_quota_but_an_abort_does_not(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 3)
    first = rpc(client, project, make_request(account.authenticator, cpu_req_instances=2.0))
    crashed, aborted = (r.name for r in first.results[:2])
    rpc(
        client,
        project,
        make_request(
            account.authenticator,
            hostid=first.hostid,
            rpc_seqno=1,
            cpu_req_secs=0.0,
            work_req_seconds=0.0,
            results=(reported(crashed, state=3, exit_status=1), reported(aborted, state=6, exit_status=203)),
        ),
    )
    hav = HostAppVersion.objects.get()
    assert hav.max_jobs_per_day == 199


def test_success_doubles_a_reduced_quota(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 2)
    first = rpc(client, project, make_request(account.authenticator))
    HostAppVersion.objects.update(max_jobs_per_day=20)
    rpc(
        client,
        project,
        make_request(
            account.authenticator,
            hostid=first.hostid,
            rpc_seqno=1,
            results=(reported(first.results[0].name),),
        ),
    )
    assert HostAppVersion.objects.get().max_jobs_per_day == 40


def test_never_two_results_of_one_workunit_to_the_same_host(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 3, target_nresults=2, min_quorum=2)
    reply = rpc(client, project, big_request(account))
    wu_names = [r.wu_name for r in reply.results]
    assert len(wu_names) == 3
    assert len(set(wu_names)) == 3


def test_one_result_per_user_per_workunit_across_the_users_hosts(client, project, account, cpu_app):
    project.one_result_per_user_per_wu = True
    project.save()
    make_jobs(project, cpu_app, 2, target_nresults=2, min_quorum=2)
    first = rpc(client, project, big_request(account))
    base = big_request(account)
    second_host = rpc(client, project, replace(base, host_info=replace(base.host_info, host_cpid="second")))
    assert len(first.results) == 2
    assert second_host.results == ()


def test_jobs_that_cannot_meet_their_deadline_are_not_sent(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 2, fpops_est=1e15, delay_bound=3600)  # ~11 days at 1 GFLOPS
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.results == ()
    assert any("deadlines" in m.text for m in reply.messages)


def test_jobs_needing_more_memory_than_the_host_are_not_sent(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1, rsc_memory_bound=64e9)
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.results == ()
    assert any("memory" in m.text for m in reply.messages)


def test_report_deadline_is_sent_time_plus_delay_bound(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1, delay_bound=7200)
    reply = rpc(client, project, make_request(account.authenticator))
    result = Result.objects.get(name=reply.results[0].name)
    assert reply.results[0].report_deadline == pytest.approx(result.sent_time.timestamp() + 7200)


def test_higher_priority_jobs_go_first(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 3, prefix="low")
    make_jobs(project, cpu_app, 1, prefix="urgent", priority=10)
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.results[0].wu_name == "urgent0"


def test_runtime_estimate_uses_the_hosts_elapsed_time_statistics(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 5)
    first = rpc(client, project, make_request(account.authenticator))
    # Ten samples saying this host does 5e9 fpops_est-units per second (et = 2e-10 s per FLOP).
    HostAppVersion.objects.update(et_n=12, et_avg=2e-10)
    second = rpc(client, project, make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1))
    assert second.app_versions[0].flops == pytest.approx(5e9)


def anonymous_request(account, **kw):
    version = ClientAppVersion(
        app_name="cpuapp", version_num=100, platform=PLATFORM, avg_ncpus=1.0, flops=1e9
    )
    return make_request(account.authenticator, platform_name="anonymous", app_versions=(version,), **kw)


def test_anonymous_platform_sends_the_workunit_as_the_client_expects_until_statistics_exist(
    client, project, account, cpu_app
):
    [wu] = make_jobs(project, cpu_app, 1, fpops_est=1e11)
    reply = rpc(client, project, anonymous_request(account))
    assert [w.rsc_fpops_est for w in reply.workunits] == [pytest.approx(1e11)]
    assert [w.rsc_fpops_bound for w in reply.workunits] == [pytest.approx(wu.rsc_fpops_bound)]


def test_anonymous_platform_runtime_uses_the_hosts_elapsed_time_statistics(client, project, account, cpu_app):
    wus = {wu.name: wu for wu in make_jobs(project, cpu_app, 2, fpops_est=1e11)}
    first = rpc(client, project, anonymous_request(account, cpu_req_secs=1.0))
    # Twelve samples saying this host runs the client's version at 4e9 FLOPS, where the
    # client's app_info says 1e9: the client estimates runtimes from its own 1e9, so the
    # workunit is sent a quarter as large, and so is its bound.
    HostAppVersion.objects.update(et_n=12, et_avg=2.5e-10)
    second = rpc(client, project, anonymous_request(account, hostid=first.hostid, rpc_seqno=1))
    [sent] = second.workunits
    assert sent.rsc_fpops_est == pytest.approx(0.25e11)
    assert sent.rsc_fpops_bound == pytest.approx(wus[sent.name].rsc_fpops_bound / 4)
    result = Result.objects.get(name=second.results[0].name)
    assert result.workunit.rsc_fpops_est == pytest.approx(1e11)  # the stored workunit is unchanged
