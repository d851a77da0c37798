"""A host's claimed CPU and GPU counts are capped before they multiply its job limits.

BOINC believes at most config.xml's max_ncpus CPUs (default 64) and 64 GPUs of a type
(sched_send.h's MAX_GPUS) when it scales the per-RPC, in-progress and daily limits. The
host row keeps what the client reported.
"""

from dataclasses import replace

import pytest

from apps.core import clock
from apps.core.domain.resources import ProcType
from apps.hosts.models import Host, HostCoproc
from apps.scheduler.domain.policy import effective_instances
from apps.scheduler.services import work_need
from apps.scheduler.services.context import RpcContext
from tests.factories import HostFactory
from tests.scheduler.conftest import GPU, make_jobs, make_request, rpc

CPU, NVIDIA, ATI = ProcType.CPU, ProcType.NVIDIA, ProcType.ATI


def claiming(account, *, ncpus: int, **kw):
    """A request for plenty of CPU work from a host reporting ``ncpus`` CPUs (and the disk
    space for hundreds of jobs)."""
    kw = {"cpu_req_secs": 1e6, "work_req_seconds": 1e6, **kw}
    req = make_request(account.authenticator, **kw)
    return replace(req, host_info=replace(req.host_info, p_ncpus=ncpus, d_total=1e13, d_free=1e13))


def gpu_claiming(account, *, count: int, **kw):
    """A request for GPU work only, from a host reporting ``count`` NVIDIA GPUs."""
    gpu = replace(GPU, count=count, req_secs=3600.0)
    return claiming(account, ncpus=4, cpu_req_secs=0.0, work_req_seconds=3600.0, coprocs=(gpu,), **kw)


# --- the rule, without a database ------------------------------------------------------


def test_cpus_past_max_ncpus_are_not_counted():
    instances = effective_instances(p_ncpus=1_000_000, gpu_counts=(), max_ncpus=64, max_ngpus=64)
    assert instances.ncpus == 64


def test_cpus_past_4096_are_never_counted_whatever_max_ncpus_says():
    instances = effective_instances(p_ncpus=1_000_000, gpu_counts=(), max_ncpus=100_000, max_ngpus=64)
    assert instances.ncpus == 4096


def test_a_host_reporting_no_cpus_counts_as_one():
    assert effective_instances(p_ncpus=0, gpu_counts=(), max_ncpus=64, max_ngpus=64).ncpus == 1


def test_each_gpu_type_is_capped_on_its_own():
    instances = effective_instances(
        p_ncpus=4, gpu_counts=((NVIDIA, 4096), (ATI, 2)), max_ncpus=64, max_ngpus=64
    )
    assert (instances.gpus, instances.ngpus) == ({NVIDIA: 64, ATI: 2}, 66)


def test_a_repeated_gpu_type_counts_once():
    instances = effective_instances(
        p_ncpus=4, gpu_counts=((NVIDIA, 2), (NVIDIA, 64)), max_ncpus=64, max_ngpus=64
    )
    assert instances.gpus == {NVIDIA: 2}


def test_counts_within_the_caps_are_unchanged():
    instances = effective_instances(p_ncpus=4, gpu_counts=((NVIDIA, 1),), max_ncpus=64, max_ngpus=64)
    assert (instances.ncpus, instances.gpus) == (4, {NVIDIA: 1})


# --- what a host gets ---------------------------------------------------------------------


@pytest.mark.django_db
def test_a_host_claiming_a_million_cpus_gets_no_more_jobs_in_progress_than_a_64_cpu_host(
    client, project, account, cpu_app
):
    project.max_wus_in_progress = 2
    project.save()
    make_jobs(project, cpu_app, 200)
    first = rpc(client, project, claiming(account, ncpus=1_000_000))
    second = rpc(client, project, claiming(account, ncpus=1_000_000, hostid=first.hostid, rpc_seqno=1))
    assert (len(first.results), len(second.results)) == (128, 0)  # 2 per CPU × 64 CPUs


@pytest.mark.django_db
def test_a_host_claiming_4096_gpus_gets_no_more_gpu_jobs_in_progress_than_a_64_gpu_host(
    client, project, account, mixed_app
):
    project.max_wus_in_progress_gpu = 1
    project.save()
    make_jobs(project, mixed_app, 100)
    first = rpc(client, project, gpu_claiming(account, count=4096))
    second = rpc(client, project, gpu_claiming(account, count=4096, hostid=first.hostid, rpc_seqno=1))
    assert (len(first.results), len(second.results)) == (64, 0)  # 1 per GPU × 64 GPUs
    assert {r.plan_class for r in first.results} == {"cuda"}


@pytest.mark.django_db
def test_a_host_claiming_a_million_cpus_gets_no_more_jobs_per_rpc_than_a_64_cpu_host(
    client, project, account, cpu_app
):
    project.max_wus_to_send = 1
    project.save()
    make_jobs(project, cpu_app, 100)
    reply = rpc(client, project, claiming(account, ncpus=1_000_000))
    assert len(reply.results) == 64


@pytest.mark.django_db
def test_a_host_claiming_a_million_cpus_gets_no_bigger_daily_quota_than_a_64_cpu_host(
    client, project, account, cpu_app
):
    project.daily_result_quota = 2  # (1 would be a punished host's quota, never scaled)
    project.save()
    make_jobs(project, cpu_app, 200)
    first = rpc(client, project, claiming(account, ncpus=1_000_000))
    second = rpc(client, project, claiming(account, ncpus=1_000_000, hostid=first.hostid, rpc_seqno=1))
    assert (len(first.results), len(second.results)) == (128, 0)  # 2 a day per CPU × 64 CPUs
    assert any("daily quota" in m.text for m in second.messages)


@pytest.mark.django_db
def test_a_4_cpu_host_is_limited_by_its_own_4_cpus(client, project, account, cpu_app):
    project.max_wus_in_progress = 2
    project.save()
    make_jobs(project, cpu_app, 30)
    reply = rpc(client, project, claiming(account, ncpus=4))
    assert len(reply.results) == 8


@pytest.mark.django_db
def test_the_admin_can_raise_max_ncpus_for_bigger_hosts(client, project, account, cpu_app):
    project.max_wus_in_progress = 1
    project.max_ncpus = 128
    project.save()
    make_jobs(project, cpu_app, 200)
    reply = rpc(client, project, claiming(account, ncpus=128))
    assert len(reply.results) == 128


@pytest.mark.django_db
def test_the_host_row_keeps_the_counts_the_client_reported(client, project, account, mixed_app):
    req = gpu_claiming(account, count=4096)
    rpc(client, project, replace(req, host_info=replace(req.host_info, p_ncpus=1_000_000)))
    host = Host.objects.get()
    assert (host.p_ncpus, HostCoproc.objects.get(host=host).count) == (1_000_000, 4096)


@pytest.mark.django_db
def test_the_work_request_caps_jobs_but_spreads_its_delay_over_the_reported_instances(project, account):
    req = gpu_claiming(account, count=4096)
    req = replace(req, host_info=replace(req.host_info, p_ncpus=1_000_000))
    host = HostFactory(account=account, p_ncpus=1_000_000)  # as the request recorded it
    need = work_need(RpcContext(project=project, req=req, now=clock.now(), account=account, host=host))
    ninstances = {p: r.ninstances for p, r in need.resources.items()}
    assert (ninstances, need.max_jobs) == ({CPU: 1_000_000, NVIDIA: 4096}, (64 + 64) * 10)


@pytest.mark.django_db
def test_a_multi_thread_version_is_sized_for_the_capped_cpus(client, project, account, mt_app):
    reply = rpc(client, project, claiming(account, ncpus=1_000_000))
    assert [v.avg_ncpus for v in reply.app_versions] == [64]


@pytest.mark.django_db
def test_the_project_admin_shows_the_host_count_caps(admin_client, project):
    page = admin_client.get(f"/admin/projects/project/{project.pk}/change/").content.decode()
    assert 'name="max_ncpus" value="64"' in page
    assert 'name="max_ngpus" value="64"' in page
