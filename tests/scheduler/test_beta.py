"""Beta (test) apps and app versions go only to volunteers who allow beta work
(the "Run test applications?" project preference, BOINC's allow_beta_work)."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.applications.models import AppVersion
from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.protocol import ClientAppVersion
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.scheduler.conftest import PLATFORM, make_jobs, make_request, rpc

pytestmark = pytest.mark.django_db


@pytest.fixture
def beta_version(project, cpu_app, worker) -> AppVersion:
    """Version 2.00 of cpuapp, marked beta; 1.00 is the released one."""
    version = app_version_add(
        project=project,
        app_name="cpuapp",
        version_num=200,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    version.beta = True
    version.save()
    return version


@pytest.fixture
def beta_app(project, worker):
    app = app_create(project=project, name="testapp", user_friendly_name="Test app", beta=True)
    app_version_add(
        project=project,
        app_name="testapp",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    return app


def allow_beta(account) -> None:
    account.allow_beta_work = True
    account.save()


def no_work_message(reply) -> str:
    return next(m.text for m in reply.messages if m.text.startswith("No tasks sent"))


def test_user_without_beta_gets_the_released_version_when_a_newer_beta_exists(
    client, project, account, cpu_app, beta_version
):
    make_jobs(project, cpu_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    assert [r.version_num for r in reply.results] == [100]
    assert [v.version_num for v in reply.app_versions] == [100]


def test_user_allowing_beta_gets_the_beta_version(client, project, account, cpu_app, beta_version):
    allow_beta(account)
    make_jobs(project, cpu_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    assert [r.version_num for r in reply.results] == [200]
    assert Result.objects.get().app_version_id == beta_version.id


def test_a_version_marked_beta_after_it_was_sent_stops_going_to_users_without_beta(
    project, account, cpu_app, worker
):
    make_jobs(project, cpu_app, 2)
    client = Client()
    version = app_version_add(
        project=project,
        app_name="cpuapp",
        version_num=200,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    first = rpc(client, project, make_request(account.authenticator))
    assert [r.version_num for r in first.results] == [200]

    version.beta = True
    version.save()  # as the admin does: the scheduler's cached catalog is dropped
    again = make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1, other_results=())
    second = rpc(client, project, again)
    assert [r.version_num for r in second.results] == [100]


def test_beta_app_jobs_are_not_sent_to_a_user_without_beta(client, project, account, beta_app):
    make_jobs(project, beta_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    assert reply.results == ()
    assert Result.objects.get().server_state == ServerState.UNSENT


def test_user_without_beta_is_told_why_a_beta_apps_jobs_were_not_sent(client, project, account, beta_app):
    make_jobs(project, beta_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    assert no_work_message(reply) == (
        "No tasks sent: Tasks of test applications (Test app) go only to volunteers who allow them:"
        ' turn on "Run test applications?" in your project preferences.'
    )


def test_beta_app_without_jobs_is_not_given_as_the_reason(client, project, account, cpu_app, beta_app):
    reply = rpc(client, project, make_request(account.authenticator))
    assert no_work_message(reply) == "No tasks sent: No tasks are available for CPU."


def test_beta_app_jobs_are_sent_to_a_user_allowing_beta(client, project, account, beta_app):
    allow_beta(account)
    make_jobs(project, beta_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    assert [r.wu_name for r in reply.results] == ["job0"]


def test_user_without_beta_still_gets_the_jobs_of_released_apps(client, project, account, cpu_app, beta_app):
    make_jobs(project, beta_app, 1, prefix="test")
    make_jobs(project, cpu_app, 1, prefix="released")
    reply = rpc(client, project, make_request(account.authenticator))
    assert [r.wu_name for r in reply.results] == ["released0"]


def test_anonymous_platform_user_without_beta_gets_no_beta_app_jobs(client, project, account, beta_app):
    make_jobs(project, beta_app, 1)
    own = ClientAppVersion(app_name="testapp", version_num=100, platform=PLATFORM, avg_ncpus=1.0, flops=1e9)
    req = make_request(account.authenticator, platform_name="anonymous", app_versions=(own,))
    reply = rpc(client, project, req)
    assert reply.results == ()
    assert "Tasks of test applications (Test app)" in no_work_message(reply)
