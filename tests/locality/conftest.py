"""Locality fixtures: a locality project with an app, large files, and simulated hosts.

Hosts are ``SimHost`` clients from the simulation module: they report the sticky files
they hold, keep the sticky files they are sent, and drop the ones they are told to delete.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection

from apps.applications.models import App
from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.benchmarks.locality_simulation import PLATFORM, SimHost
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.protocol import SchedulerReply
from apps.scheduler.services import scheduler_request_handle
from apps.volunteers.models import Account, make_passwd_hash
from apps.work.domain.locality_names import workunit_name
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import InputFile, Result, Workunit
from apps.work.services import InputSpec, JobSpec, workunits_create

MB = 1_000_000
GENERATOR = "apps.locality.generators.example_work_generator"


@pytest.fixture
def loc_project(tmp_path: Path) -> Project:
    project = project_create(slug="loc", name="Locality", locality_scheduling=True).project
    project.request_delay = 0
    project.save()
    return project


@pytest.fixture
def loc_app(loc_project: Project, tmp_path: Path) -> App:
    worker = tmp_path / "worker.sh"
    worker.write_text("#!/bin/sh\necho 0 > boinc_finish_called\n")
    app = app_create(project=loc_project, name="search", min_quorum=2, target_nresults=2, max_total_results=4)
    app_version_add(
        project=loc_project,
        app_name="search",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    return app


def large_file(project: Project, name: str, nbytes: int = 10 * MB) -> InputFile:
    """A large file in the download area (sized only; the tests never download it)."""
    return InputFile.objects.create(
        project=project,
        name=name,
        md5_cksum=hashlib.md5(name.encode()).hexdigest(),
        nbytes=nbytes,
        sticky=True,
        report_on_rpc=True,
    )


def file_work(project: Project, app: App, name: str, n: int, *, start: int = 0) -> list[Workunit]:
    """``n`` workunits ``name__<k>`` using the large file ``name`` (staged first if needed)."""
    if not InputFile.objects.filter(project=project, name=name).exists():
        large_file(project, name)
    jobs = [
        JobSpec(
            name=workunit_name(name, f"{k:03d}"),
            inputs=(InputSpec(name=name),),
            rsc_fpops_est=1e11,
            rsc_fpops_bound=1e13,
        )
        for k in range(start, start + n)
    ]
    return workunits_create(project=project, app=app, jobs=jobs)


def volunteer(project: Project, name: str) -> Account:
    email = f"{name}@example.com"
    return Account.objects.create(
        project=project, name=name, email_addr=email, passwd_hash=make_passwd_hash(None)
    )


class Hosts:
    """Makes simulated hosts and runs their RPCs through the real scheduler service."""

    def __init__(self, project: Project, now: datetime) -> None:
        self.project = project
        self.now = now
        self._n = 0

    def new(self, account: Account | None = None, *, files: dict[str, float] | None = None) -> SimHost:
        self._n += 1
        account = account or volunteer(self.project, f"vol{self._n}")
        host = SimHost(authenticator=account.authenticator, cpid=f"cpid{self._n}")
        host.sticky.update(files or {})
        return host

    def rpc(self, host: SimHost, *, jobs: int = 1, at: datetime | None = None) -> SchedulerReply:
        """One RPC; the clock moves one second each time so RPCs are distinct."""
        self.now = at or self.now + timedelta(seconds=1)
        reply = scheduler_request_handle(project=self.project, req=host.request(jobs=jobs), now=self.now)
        host.absorb(reply)
        return reply


@pytest.fixture
def hosts(loc_project: Project, now: datetime) -> Hosts:
    return Hosts(loc_project, now)


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The generator task is not sent to a broker; the ids it would get are kept here."""
    sent: list[int] = []
    monkeypatch.setattr("apps.locality.need_work.work_generation_enqueue", sent.append)
    return sent


def wu_file(result_name: str) -> str:
    return result_name.split("__", 1)[0]


class FakeClock:
    """monotonic/sleep for the on-demand wait; ``on_sleep`` runs at each sleep (the 'worker')."""

    def __init__(self, on_sleep=None) -> None:
        self.t = 1000.0
        self.slept = 0.0
        self.calls = 0
        self.on_sleep = on_sleep

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert connection.in_atomic_block is False, "the wait must not hold a transaction"
        self.calls += 1
        self.t += seconds
        self.slept += seconds
        if self.on_sleep is not None:
            self.on_sleep(self)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr("apps.scheduler.services.sources.locality.monotonic", fake.monotonic)
    monkeypatch.setattr("apps.scheduler.services.sources.locality.sleep", fake.sleep)
    return fake


@pytest.fixture
def on_demand(loc_project: Project, loc_app: App) -> Project:
    """a.dat had one workunit, all of whose results are done: nothing left to send."""
    loc_project.locality_scheduling_wait_period = 5
    loc_project.locality_work_generator = GENERATOR
    loc_project.save()
    file_work(loc_project, loc_app, "a.dat", 1)
    Result.objects.update(server_state=ServerState.OVER, outcome=Outcome.SUCCESS)
    return loc_project
