"""The project preferences set on the web, in the scheduler: sent to the client in
<project_preferences> (the resource share), and honoured for the host's venue (processor
types) and the app selection ("allow other apps when the selected ones have no work")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.applications.services import AppFileSpec, app_create, app_version_add
from apps.hosts.models import Host
from apps.protocol.project_prefs import ProjectPrefs, ProjectPrefsDoc
from apps.scheduler.services import SELECTED_APPS_NO_WORK
from apps.scheduler.services.prefs import account_project_prefs_save
from tests.scheduler.conftest import GPU, PLATFORM, make_jobs, make_request, rpc

pytestmark = pytest.mark.django_db

# Asks for plenty of CPU work: every job that may go is sent.
MUCH_WORK = {"cpu_req_secs": 1e6, "work_req_seconds": 1e6}


@pytest.fixture
def other_app(project, worker):
    app = app_create(project=project, name="otherapp", user_friendly_name="Other app")
    app_version_add(
        project=project,
        app_name="otherapp",
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    return app


def save(account, primary: ProjectPrefs, **venues: ProjectPrefs) -> None:
    doc = ProjectPrefsDoc(primary=primary)
    for name, prefs in venues.items():
        doc = doc.with_venue(name, prefs)
    account_project_prefs_save(account=account, doc=doc)


def app_names(reply) -> set[str]:
    return {wu.app_name for wu in reply.workunits}


def test_reply_carries_the_resource_share_set_on_the_web(client, project, account):
    save(account, ProjectPrefs(resource_share=250))
    reply = rpc(client, project, make_request(account.authenticator))
    assert "<resource_share>250</resource_share>" in reply.project_preferences


def test_reply_carries_each_venues_resource_share(client, project, account):
    save(account, ProjectPrefs(resource_share=250), home=ProjectPrefs(resource_share=40))
    reply = rpc(client, project, make_request(account.authenticator))
    assert '<venue name="home">\n    <resource_share>40</resource_share>' in reply.project_preferences


def test_selected_app_only_is_sent(client, project, account, cpu_app, other_app):
    make_jobs(project, cpu_app, 2, prefix="a")
    make_jobs(project, other_app, 2, prefix="b")
    save(account, ProjectPrefs(apps_selected=(other_app.id,)))
    reply = rpc(client, project, make_request(account.authenticator, **MUCH_WORK))
    assert app_names(reply) == {"otherapp"}


def test_other_apps_are_not_sent_when_the_selected_have_no_work_and_others_are_not_allowed(
    client, project, account, cpu_app, other_app
):
    make_jobs(project, cpu_app, 2)
    save(account, ProjectPrefs(apps_selected=(other_app.id,)))
    reply = rpc(client, project, make_request(account.authenticator, **MUCH_WORK))
    assert reply.results == ()
    assert any(SELECTED_APPS_NO_WORK in m.text for m in reply.messages)


def test_other_apps_are_sent_when_the_selected_have_no_work_and_others_are_allowed(
    client, project, account, cpu_app, other_app
):
    make_jobs(project, cpu_app, 2)
    save(account, ProjectPrefs(apps_selected=(other_app.id,), allow_non_preferred_apps=True))
    reply = rpc(client, project, make_request(account.authenticator, **MUCH_WORK))
    assert app_names(reply) == {"cpuapp"}
    assert len(reply.results) == 2


def test_other_apps_wait_while_a_selected_app_has_work_even_when_allowed(
    client, project, account, cpu_app, other_app
):
    make_jobs(project, cpu_app, 3, prefix="a")
    make_jobs(project, other_app, 1, prefix="b")
    save(account, ProjectPrefs(apps_selected=(other_app.id,), allow_non_preferred_apps=True))
    reply = rpc(client, project, make_request(account.authenticator, **MUCH_WORK))
    assert [r.name for r in reply.results] == ["b0_0"]


def test_the_selection_of_the_hosts_venue_applies(client, project, account, cpu_app, other_app):
    make_jobs(project, cpu_app, 2, prefix="a")
    make_jobs(project, other_app, 2, prefix="b")
    save(account, ProjectPrefs(apps_selected=(cpu_app.id,)), work=ProjectPrefs(apps_selected=(other_app.id,)))
    first = rpc(client, project, make_request(account.authenticator))
    Host.objects.filter(pk=first.hostid).update(venue="work")
    reply = rpc(client, project, make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1))
    assert (app_names(first), app_names(reply)) == ({"cpuapp"}, {"otherapp"})


def test_a_venue_without_its_own_set_uses_the_primary(client, project, account, cpu_app, other_app):
    make_jobs(project, cpu_app, 1, prefix="a")
    make_jobs(project, other_app, 1, prefix="b")
    save(account, ProjectPrefs(apps_selected=(cpu_app.id,)), work=ProjectPrefs(apps_selected=(other_app.id,)))
    account.venue = "home"  # new computers start at home
    account.save()
    reply = rpc(client, project, make_request(account.authenticator, **MUCH_WORK))
    assert app_names(reply) == {"cpuapp"}


def test_a_venues_refused_gpu_type_gets_cpu_jobs_only(client, project, account, mixed_app):
    save(account, ProjectPrefs(), home=ProjectPrefs(no_cuda=True))
    account.venue = "home"
    account.save()
    make_jobs(project, mixed_app, 20)
    gpu = replace(GPU, req_secs=3600.0, req_instances=1.0)
    reply = rpc(client, project, make_request(account.authenticator, cpu_req_secs=150.0, coprocs=(gpu,)))
    assert reply.results
    assert {v.plan_class for v in reply.app_versions} == {""}


def test_stored_preferences_that_are_not_xml_fall_back_to_the_columns(client, project, account, cpu_app):
    account.project_prefs = "<resource_share>5"
    account.save()
    make_jobs(project, cpu_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))
    assert len(reply.results) == 1


def test_stored_preferences_and_an_app_selection_add_no_statement(
    client, project, account, cpu_app, other_app
):
    make_jobs(project, cpu_app, 4)
    first = rpc(client, project, make_request(account.authenticator))
    ask = {"hostid": first.hostid, "cpu_req_secs": 1.0, "work_req_seconds": 1.0}
    with CaptureQueriesContext(connection) as plain:
        rpc(client, project, make_request(account.authenticator, rpc_seqno=1, **ask))
    save(account, ProjectPrefs(resource_share=250, apps_selected=(cpu_app.id,)))
    with CaptureQueriesContext(connection) as selecting:
        reply = rpc(client, project, make_request(account.authenticator, rpc_seqno=2, **ask))
    assert len(reply.results) == 1
    assert len(selecting) == len(plain)
