"""Non-CPU-intensive apps: flagged in the reply's <app>, one job per host at a time."""

import pytest

from apps.applications.services import AppFileSpec, app_create, app_version_add
from tests.scheduler.conftest import PLATFORM, make_jobs, make_request, rpc

pytestmark = pytest.mark.django_db


@pytest.fixture
def nci_app(project, worker):
    app = app_create(project=project, name="monitor", user_friendly_name="Monitor")
    app.non_cpu_intensive = True
    app.save()
    app_version_add(
        project=project,
        app_name="monitor",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    make_jobs(project, app, 3, prefix="mon")
    return app


def _ask_a_day(account, **kw):
    return make_request(account.authenticator, work_req_seconds=86400.0, cpu_req_secs=86400.0, **kw)


def test_nci_app_is_flagged_in_the_reply(client, project, account, nci_app):
    reply = rpc(client, project, _ask_a_day(account))
    assert [(a.name, a.non_cpu_intensive) for a in reply.apps] == [("monitor", True)]


def test_host_asking_for_much_work_gets_one_nci_job(client, project, account, nci_app):
    reply = rpc(client, project, _ask_a_day(account))
    assert [r.name for r in reply.results] == ["mon0_0"]


def test_host_with_an_nci_job_in_progress_gets_no_other(client, project, account, nci_app):
    first = rpc(client, project, _ask_a_day(account))
    second = rpc(client, project, _ask_a_day(account, hostid=first.hostid, rpc_seqno=1))
    assert second.results == ()


def test_ordinary_jobs_come_besides_the_nci_job(client, project, account, nci_app, cpu_app):
    make_jobs(project, cpu_app, 3)
    reply = rpc(client, project, _ask_a_day(account))
    names = sorted(r.name for r in reply.results)
    assert names == ["job0_0", "job1_0", "job2_0", "mon0_0"]
    flags = {a.name: a.non_cpu_intensive for a in reply.apps}
    assert flags == {"cpuapp": False, "monitor": True}
