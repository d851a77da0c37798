"""Helpers for scheduler tests: a project with apps and work, and requests shaped like 7.20.5's."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
from django.test import Client

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.core.domain.resources import ProcType
from apps.projects.services import project_create
from apps.protocol import (
    Coproc,
    HostInfo,
    OtherResult,
    ReportedFile,
    ReportedResult,
    SchedulerReply,
    SchedulerRequest,
    TimeStats,
    parse_reply,
    render_request,
)
from apps.scheduler.services import dispatch
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.services import JobSpec, workunits_create

PLATFORM = "x86_64-pc-linux-gnu"


@pytest.fixture
def project(tmp_path: Path):
    project = project_create(slug="sched", name="Scheduler Test").project
    project.request_delay = 7
    project.save()
    return project


@pytest.fixture
def account(project):
    email = "vol@example.com"
    return Account.objects.create(
        project=project, name="Vol", email_addr=email, passwd_hash=make_passwd_hash(None)
    )


@pytest.fixture
def worker(tmp_path: Path) -> Path:
    path = tmp_path / "worker.sh"
    path.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    return path


@pytest.fixture
def cpu_app(project, worker):
    app = app_create(project=project, name="cpuapp", user_friendly_name="CPU app")
    app_version_add(
        project=project,
        app_name="cpuapp",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    return app


@pytest.fixture
def mixed_app(project, worker):
    """An app with a CPU and an NVIDIA version."""
    app = app_create(project=project, name="mixed", user_friendly_name="Mixed app")
    app_version_add(
        project=project,
        app_name="mixed",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    app_version_add(
        project=project,
        app_name="mixed",
        version_num=100,
        platform_name=PLATFORM,
        plan_class="cuda",
        files=[AppFileSpec(path=worker)],
    )
    return app


@pytest.fixture
def mt_app(project, worker):
    """A multi-thread app (plan class ``mt``) with one job."""
    app = app_create(project=project, name="mtapp")
    app_version_add(
        project=project,
        app_name="mtapp",
        version_num=100,
        platform_name=PLATFORM,
        plan_class="mt",
        files=[AppFileSpec(path=worker)],
    )
    make_jobs(project, app, 1)
    return app


def make_jobs(project, app, n: int, *, prefix: str = "job", fpops_est: float = 1e11, **kw) -> list:
    jobs = [
        JobSpec(name=f"{prefix}{i}", rsc_fpops_est=fpops_est, rsc_fpops_bound=fpops_est * 100, **kw)
        for i in range(n)
    ]
    return workunits_create(project=project, app=app, jobs=jobs)


GPU = Coproc(
    type=ProcType.NVIDIA,
    count=1,
    name="NVIDIA GeForce RTX 4070",
    available_ram=12e9,
    peak_flops=2e12,
    properties=(("have_cuda", "1"), ("have_opencl", "1")),
)


def make_request(authenticator: str, **overrides) -> SchedulerRequest:
    """A request like the stock client's first RPC: asks for 1 s of CPU work."""
    base = SchedulerRequest(
        authenticator=authenticator,
        hostid=0,
        rpc_seqno=0,
        core_client_major_version=7,
        core_client_minor_version=20,
        core_client_release=5,
        work_req_seconds=1.0,
        cpu_req_secs=1.0,
        cpu_req_instances=0.0,
        platform_name=PLATFORM,
        time_stats=TimeStats(on_frac=1.0, active_frac=1.0, gpu_active_frac=1.0),
        host_info=HostInfo(
            p_ncpus=4,
            p_fpops=1e9,
            p_iops=1e9,
            m_nbytes=8e9,
            d_total=2e11,
            d_free=1e11,
            host_cpid="cpid-test",
            domain_name="testhost",
            os_name="Linux Debian",
        ),
        other_results=(),
    )
    return replace(base, **overrides)


def reported(name: str, *, state: int = 5, exit_status: int = 0, elapsed: float = 100.0) -> ReportedResult:
    return ReportedResult(
        name=name,
        final_cpu_time=elapsed * 0.9,
        final_elapsed_time=elapsed,
        exit_status=exit_status,
        state=state,
        platform=PLATFORM,
        version_num=100,
        app_version_num=100,
        stderr_out="<stderr_txt>ok</stderr_txt>",
        files=(
            ReportedFile(
                name=f"{name}_0", nbytes=12, max_nbytes=1e6, md5_cksum="d533b16cb509e0614cb307fa6494b7eb"
            ),
        ),
    )


def others(*names: str) -> tuple[OtherResult, ...]:
    return tuple(OtherResult(name=n, app_version=0) for n in names)


def rpc(client: Client, project, req: SchedulerRequest, *, raw: bytes | None = None) -> SchedulerReply:
    body = raw if raw is not None else render_request(req)
    response = client.post(
        f"/{project.slug}/cgi", data=body, content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200, response.content[:500]
    return parse_reply(response.content)


def flush_paused(monkeypatch, first: str) -> threading.Event:
    """The RPC of the thread named ``first`` pauses just before writing its sends, until
    another thread's RPC is about to write its own (or 2 s); the event is set when it pauses."""
    first_waits, other_writes = threading.Event(), threading.Event()
    flush = dispatch.Dispatcher.flush

    def paused_flush(self):
        if threading.current_thread().name == first:
            first_waits.set()
            other_writes.wait(2)
        else:
            other_writes.set()
        flush(self)

    monkeypatch.setattr(dispatch.Dispatcher, "flush", paused_flush)
    return first_waits
