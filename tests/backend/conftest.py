"""Helpers for the back-end daemon tests: a project with an app, hosts, and jobs that are sent
and reported the way the scheduler does it (rows written directly, outputs in the upload area)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from apps.applications.models import App, AppVersion
from apps.hosts.models import Host, HostAppVersion
from apps.projects.models import Project
from apps.projects.services import project_create
from apps.volunteers.models import Account, Team
from apps.work.domain.states import ClientState, Outcome, ServerState
from apps.work.models import OutputFile, Result, Workunit
from apps.work.services import JobSpec, workunits_create
from apps.work.services.claims import claims_forget
from tests.factories import AccountFactory, AppFactory, AppVersionFactory, HostFactory, TeamFactory


@pytest.fixture(autouse=True)
def _claims_forgotten() -> Iterator[None]:
    """What a daemon's process remembers of failed passes names rows of this test's database."""
    yield
    claims_forget()


@pytest.fixture
def project(db) -> Project:
    project = project_create(slug="backend", name="Backend Test").project
    project.report_grace_period = 3600
    project.save()
    return project


@pytest.fixture
def app(project) -> App:
    """min_quorum 2 / target_nresults 2, bitwise validator."""
    return AppFactory(
        project=project,
        name="sim",
        min_quorum=2,
        target_nresults=2,
        max_error_results=3,
        max_total_results=6,
        max_success_results=4,
    )


@pytest.fixture
def version(app) -> AppVersion:
    return AppVersionFactory(app=app)


@pytest.fixture
def team(project) -> Team:
    return TeamFactory(project=project)


def make_host(project: Project, *, team: Team | None = None, name: str = "") -> Host:
    account = AccountFactory(project=project, team=team, **({"name": name} if name else {}))
    return HostFactory(account=account, project=project)


@pytest.fixture
def hosts(project, team) -> list[Host]:
    return [make_host(project, team=team) for _ in range(4)]


def make_wu(
    project: Project, app: App, now: datetime, name: str = "wu", *, create_results: bool = True, **kw
) -> Workunit:
    spec = JobSpec(name=name, rsc_fpops_est=1e12, rsc_fpops_bound=1e14, **kw)
    return workunits_create(project=project, app=app, jobs=[spec], now=now, create_results=create_results)[0]


def send(
    result: Result, host: Host, version: AppVersion | None, now: datetime, *, delay: float = 86400
) -> Result:
    """What the scheduler writes when it sends ``result`` to ``host``."""
    result.server_state = ServerState.IN_PROGRESS
    result.host = host
    result.account = host.account
    result.app_version = version
    result.sent_time = now
    result.report_deadline = now + timedelta(seconds=delay)
    result.flops_estimate = host.p_fpops
    result.save()
    if version is not None:
        HostAppVersion.objects.get_or_create(host=host, app_version=version, app=version.app)
    return result


def report(
    result: Result,
    now: datetime,
    *,
    output: bytes | None = b"42\n",
    success: bool = True,
    elapsed: float = 300.0,
    exit_status: int = 0,
) -> Result:
    """What the client uploads and the scheduler records on a report; ``output=None``: no file."""
    project = result.project
    for f in OutputFile.objects.filter(result=result):
        if output is not None and success:
            project.upload_dir.mkdir(parents=True, exist_ok=True)
            (project.upload_dir / f.name).write_bytes(output)
            f.uploaded, f.nbytes = True, len(output)
            f.save(update_fields=["uploaded", "nbytes"])
    result.server_state = ServerState.OVER
    result.outcome = Outcome.SUCCESS if success else Outcome.CLIENT_ERROR
    result.client_state = ClientState.FILES_UPLOADED if success else ClientState.COMPUTE_ERROR
    result.exit_status = exit_status if not success else 0
    result.received_time = now
    result.elapsed_time = elapsed
    result.cpu_time = elapsed
    result.save()
    Workunit.objects.filter(id=result.workunit_id).update(transition_time=now)
    return result


def results_of(wu: Workunit) -> list[Result]:
    return list(Result.objects.filter(workunit=wu).order_by("id"))


def refresh(*rows):
    for row in rows:
        row.refresh_from_db()
    return rows


__all__ = ["Account", "make_host", "make_wu", "refresh", "report", "results_of", "send"]
