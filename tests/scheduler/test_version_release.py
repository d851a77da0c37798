"""A new app version (a higher version_num for the same platform and plan class) replaces
the old one for new jobs; the old one still runs, and reports, the jobs already sent."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.applications.models import AppVersion
from apps.applications.services import AppFileSpec, app_version_add
from apps.scheduler.services.catalog import newest_versions
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from tests.scheduler.conftest import PLATFORM, make_jobs, make_request, others, reported, rpc

pytestmark = pytest.mark.django_db


def _release(project, worker, version_num: int, plan_class: str = "") -> None:
    app_version_add(
        project=project,
        app_name="cpuapp",
        version_num=version_num,
        platform_name=PLATFORM,
        plan_class=plan_class,
        files=[AppFileSpec(path=worker)],
    )


def test_jobs_sent_after_a_release_use_the_new_version(project, account, cpu_app, worker):
    make_jobs(project, cpu_app, 2)
    client = Client()
    first = rpc(client, project, make_request(account.authenticator))
    assert [r.version_num for r in first.results] == [100]

    _release(project, worker, 200)
    again = make_request(
        account.authenticator,
        hostid=first.hostid,
        rpc_seqno=1,
        other_results=others(first.results[0].name),
    )
    second = rpc(client, project, again)
    assert [r.version_num for r in second.results] == [200]
    assert [(v.version_num, v.app_name) for v in second.app_versions] == [(200, "cpuapp")]


def test_the_old_version_still_reports_its_job_after_a_release(project, account, cpu_app, worker):
    make_jobs(project, cpu_app, 1)
    client = Client()
    first = rpc(client, project, make_request(account.authenticator))
    (sent,) = first.results
    _release(project, worker, 200)

    report = make_request(
        account.authenticator, hostid=first.hostid, rpc_seqno=1, results=(reported(sent.name),)
    )
    reply = rpc(client, project, report)
    assert list(reply.result_acks) == [sent.name]
    result = Result.objects.select_related("app_version").get(name=sent.name)
    assert (result.server_state, result.outcome) == (ServerState.OVER, Outcome.SUCCESS)
    assert result.app_version.version_num == 100


def test_each_platform_and_plan_class_keeps_its_own_newest_version():
    def version(num: int, platform_id: int = 1, plan_class: str = "") -> AppVersion:
        return AppVersion(app_id=1, platform_id=platform_id, version_num=num, plan_class=plan_class)

    versions = (version(100), version(200), version(150, plan_class="mt"), version(100, platform_id=2))
    current = newest_versions(versions)
    assert [(v.platform_id, v.plan_class, v.version_num) for v in current] == [
        (1, "", 200),
        (1, "mt", 150),
        (2, "", 100),
    ]
