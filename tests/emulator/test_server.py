from __future__ import annotations

import random

from apps.core.domain.resources import ProcType
from apps.emulator.domain.model import AppSpec, AppVersionSpec, HostSpec, ProjectSpec, ResourceSpec
from apps.emulator.domain.server import SimServer, WorkRequest

CPU, GPU = ProcType.CPU, ProcType.NVIDIA
HOST = HostSpec(resources=(ResourceSpec(CPU, 2, 1e9), ResourceSpec(GPU, 1, 2e9)))


def _server(*apps: AppSpec, job_limit: int | None = None) -> SimServer:
    project = ProjectSpec(name="P", resource_share=100, apps=apps, job_limit=job_limit)
    return SimServer(project, HOST, random.Random(1))


def _app(*procs: ProcType, latency: float = 7 * 86400.0, available_from: float = 0.0) -> AppSpec:
    return AppSpec(
        name="app",
        fpops_est=3.6e12,  # an hour on the CPU, half an hour on the GPU
        latency_bound=latency,
        versions=tuple(AppVersionSpec(p) for p in procs),
        available_from=available_from,
    )


def test_sends_fastest_version_of_requested_types() -> None:
    jobs = _server(_app(CPU, GPU)).handle_request(WorkRequest(req_secs={CPU: 1.0, GPU: 1.0}), now=0.0)
    assert jobs[0].proc_type is GPU


def test_sends_only_requested_types() -> None:
    jobs = _server(_app(CPU, GPU)).handle_request(WorkRequest(req_secs={CPU: 1.0}), now=0.0)
    assert {j.proc_type for j in jobs} == {CPU}


def test_gpu_job_does_not_decrement_cpu_request() -> None:
    jobs = _server(_app(CPU, GPU)).handle_request(WorkRequest(req_secs={CPU: 1.0, GPU: 1.0}), now=0.0)
    assert sorted(j.proc_type.value for j in jobs) == ["CPU", "NVIDIA"]


def test_request_seconds_decrement_by_estimated_duration() -> None:
    jobs = _server(_app(CPU)).handle_request(WorkRequest(req_secs={CPU: 3 * 3600.0}), now=0.0)
    assert len(jobs) == 3


def test_request_instances_are_filled() -> None:
    jobs = _server(_app(CPU)).handle_request(WorkRequest(req_instances={CPU: 2.0}), now=0.0)
    assert len(jobs) == 2


def test_old_style_request_gets_cpu_jobs_only() -> None:
    request = WorkRequest(work_req_seconds=7200.0, rsc_spec_request=False)
    jobs = _server(_app(CPU, GPU)).handle_request(request, now=0.0)
    assert {j.proc_type for j in jobs} == {CPU}


def test_old_style_request_to_gpu_only_project_gets_nothing() -> None:
    request = WorkRequest(work_req_seconds=7200.0, rsc_spec_request=False)
    assert _server(_app(GPU)).handle_request(request, now=0.0) == ()


def test_job_that_would_miss_its_deadline_is_not_sent() -> None:
    request = WorkRequest(req_secs={CPU: 1.0}, estimated_delay={CPU: 86400.0})
    assert _server(_app(CPU, latency=86400.0)).handle_request(request, now=0.0) == ()


def test_app_not_yet_available_is_not_sent() -> None:
    server = _server(_app(CPU, available_from=100.0))
    assert server.handle_request(WorkRequest(req_secs={CPU: 1.0}), now=50.0) == ()


def test_deadline_is_send_time_plus_latency_bound() -> None:
    jobs = _server(_app(CPU, latency=86400.0)).handle_request(WorkRequest(req_secs={CPU: 1.0}), now=50.0)
    assert jobs[0].deadline == 86450.0


def test_job_limit_caps_jobs_sent() -> None:
    jobs = _server(_app(CPU), job_limit=2).handle_request(WorkRequest(req_secs={CPU: 1e6}), now=0.0)
    assert len(jobs) == 2


def test_per_rpc_cap_is_ten_jobs_per_device() -> None:
    jobs = _server(_app(CPU)).handle_request(WorkRequest(req_secs={CPU: 1e9}), now=0.0)
    assert len(jobs) == 30


def test_requested_types_of_new_style_request() -> None:
    request = WorkRequest(req_secs={CPU: 0.0, GPU: 5.0}, req_instances={CPU: 0.0})
    assert request.requested_types == frozenset({GPU})
