"""BOINC's per-resource work requests, as the scheduler must honour them."""

from dataclasses import replace

import pytest

from apps.core.domain.resources import ProcType
from apps.work.models import Result
from tests.scheduler.conftest import GPU, make_jobs, make_request, rpc

pytestmark = pytest.mark.django_db


def kinds(reply) -> list[str]:
    return [r.plan_class or "cpu" for r in reply.results]


def test_gpu_seconds_only_gets_only_gpu_jobs(client, project, account, mixed_app):
    make_jobs(project, mixed_app, 20)
    gpu = replace(GPU, req_secs=3600.0, req_instances=0.0)
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, cpu_req_secs=0.0, work_req_seconds=3600.0, coprocs=(gpu,)),
    )
    assert reply.results
    assert set(kinds(reply)) == {"cuda"}


def test_cpu_instances_only_gets_enough_cpu_jobs_to_fill_them(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 20)
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, cpu_req_secs=0.0, cpu_req_instances=3.0, work_req_seconds=0.0),
    )
    assert len(reply.results) == 3


def test_zero_everywhere_gets_no_jobs(client, project, account, mixed_app):
    make_jobs(project, mixed_app, 5)
    gpu = replace(GPU, req_secs=0.0, req_instances=0.0)
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator,
            cpu_req_secs=0.0,
            cpu_req_instances=0.0,
            work_req_seconds=0.0,
            coprocs=(gpu,),
        ),
    )
    assert reply.results == ()
    assert Result.objects.filter(host__isnull=False).count() == 0


def test_old_client_work_req_seconds_still_works(client, project, account, cpu_app):
    # 1e11 FLOPs at 1e9 FLOPS is 100 s a job; 350 s asks for four of them (the last overshoots).
    make_jobs(project, cpu_app, 20)
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator, cpu_req_secs=None, cpu_req_instances=None, work_req_seconds=350.0
        ),
    )
    assert len(reply.results) == 4


def test_cpu_seconds_are_decremented_by_each_jobs_runtime(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 20)
    reply = rpc(
        client, project, make_request(account.authenticator, cpu_req_secs=250.0, work_req_seconds=250.0)
    )
    assert len(reply.results) == 3


def test_gpu_job_does_not_use_up_the_cpu_request(client, project, account, mixed_app):
    # A job takes 0.05 s on this GPU (1e11 FLOPs at 2e12 FLOPS), so 0.01 s asks for one.
    make_jobs(project, mixed_app, 40)
    gpu = replace(GPU, req_secs=0.01, req_instances=0.0)
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, cpu_req_secs=250.0, work_req_seconds=250.0, coprocs=(gpu,)),
    )
    assert kinds(reply).count("cuda") == 1
    assert kinds(reply).count("cpu") == 3


def test_first_choice_gpu_switches_to_cpu_once_gpu_need_is_met(client, project, account, mixed_app):
    # The GPU version is faster, so it is chosen first; after one GPU job the GPU request
    # is met and the remaining CPU request is served by the CPU version.
    make_jobs(project, mixed_app, 40)
    gpu = replace(GPU, req_secs=0.01, req_instances=1.0)
    reply = rpc(
        client,
        project,
        make_request(
            account.authenticator,
            cpu_req_secs=1.0,
            cpu_req_instances=2.0,
            work_req_seconds=1.0,
            coprocs=(gpu,),
        ),
    )
    assert kinds(reply)[0] == "cuda"
    assert kinds(reply).count("cuda") == 1
    assert kinds(reply).count("cpu") == 2


def test_a_job_too_late_for_the_busy_gpu_goes_to_the_cpu_instead(client, project, account, mixed_app):
    # 100 s a job on the CPU, 0.05 s on the GPU; the GPU's queue is 2 hours, the delay bound 1.
    make_jobs(project, mixed_app, 10, delay_bound=3600)
    gpu = replace(GPU, req_secs=600.0, req_instances=0.0, estimated_delay=7200.0)
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, cpu_req_secs=250.0, work_req_seconds=600.0, coprocs=(gpu,)),
    )
    assert kinds(reply) == ["cpu", "cpu", "cpu"]


def test_no_gpus_preference_gets_cpu_jobs_only(client, project, account, mixed_app):
    account.no_gpus = True
    account.save()
    make_jobs(project, mixed_app, 20)
    gpu = replace(GPU, req_secs=3600.0, req_instances=1.0)
    reply = rpc(client, project, make_request(account.authenticator, cpu_req_secs=150.0, coprocs=(gpu,)))
    assert reply.results
    assert set(kinds(reply)) == {"cpu"}


def test_no_gpus_preference_with_only_gpu_request_explains(client, project, account, mixed_app):
    account.no_gpus = True
    account.save()
    make_jobs(project, mixed_app, 5)
    gpu = replace(GPU, req_secs=3600.0, req_instances=1.0)
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, cpu_req_secs=0.0, work_req_seconds=3600.0, coprocs=(gpu,)),
    )
    assert reply.results == ()
    assert any("GPUs disabled" in m.text for m in reply.messages)


def test_project_without_gpu_apps_says_no_rsc_apps_for_the_gpu(client, project, account, cpu_app):
    gpu = replace(GPU, req_secs=100.0, req_instances=1.0)
    reply = rpc(client, project, make_request(account.authenticator, coprocs=(gpu,)))
    assert reply.no_rsc_apps == (ProcType.NVIDIA,)


def test_no_rsc_apps_never_lists_every_resource(client, project, account):
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.no_rsc_apps == ()


def test_xml_and_json_requests_with_the_same_content_get_the_same_decisions(
    client, project, account, mixed_app
):
    from apps.protocol import parse_reply, reply_from_dict, request_to_dict

    make_jobs(project, mixed_app, 40)
    gpu = replace(GPU, req_secs=400.0, req_instances=1.0)
    req = make_request(account.authenticator, cpu_req_secs=250.0, work_req_seconds=400.0, coprocs=(gpu,))
    xml_reply = rpc(client, project, req)
    Result.objects.update(server_state=2, host=None, account=None)  # put the jobs back
    from apps.hosts.models import Host

    Host.objects.all().delete()
    response = client.post(
        f"/api/v1/projects/{project.slug}/scheduler/",
        data=request_to_dict(req),
        content_type="application/json",
    )
    json_reply = reply_from_dict(response.json())
    assert response.status_code == 200
    assert [(r.name, r.plan_class) for r in json_reply.results] == [
        (r.name, r.plan_class) for r in xml_reply.results
    ]
    assert parse_reply is not None
