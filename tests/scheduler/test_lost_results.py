"""Results a host was sent but no longer holds: a client that detached and attached again
(BOINC's mark_results_over), and resend_lost_results (BOINC's resend_lost_work)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.test import Client

from apps.applications.models import AppVersion
from apps.core import clock
from apps.hosts.models import Host
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result, Workunit
from tests.scheduler.conftest import GPU, make_jobs, make_request, others, rpc

pytestmark = pytest.mark.django_db


def _first_job(client, project, account, app, n_jobs: int = 1):
    make_jobs(project, app, n_jobs)
    reply = rpc(client, project, make_request(account.authenticator))
    (sent,) = reply.results
    return reply.hostid, sent.name


def _resending_first_job(project, account, app, n_jobs: int = 1) -> tuple[Client, int, str]:
    """With resend_lost_results on: a client, its host id and the one task it was sent."""
    project.resend_lost_results = True
    project.save()
    client = Client()
    hostid, name = _first_job(client, project, account, app, n_jobs=n_jobs)
    return client, hostid, name


def test_a_reattached_client_keeps_its_host_and_its_dropped_task_ends_at_once(project, account, cpu_app):
    client = Client()
    hostid, name = _first_job(client, project, account, cpu_app)

    # Detached and attached again: no hostid, the same host_cpid, no tasks listed.
    reply = rpc(client, project, make_request(account.authenticator, cpu_req_secs=0.0, work_req_seconds=0.0))

    assert reply.hostid == hostid
    assert Host.objects.filter(project=project).count() == 1
    result = Result.objects.get(name=name)
    assert (result.server_state, result.outcome) == (ServerState.OVER, Outcome.CLIENT_DETACHED)
    # The transitioner looks at the workunit now, not at the old deadline.
    assert Workunit.objects.get(pk=result.workunit_id).transition_time <= clock.now()


def test_a_client_that_still_lists_its_task_keeps_it_when_it_attaches_again(project, account, cpu_app):
    client = Client()
    _, name = _first_job(client, project, account, cpu_app)

    rpc(client, project, make_request(account.authenticator, cpu_req_secs=0.0, other_results=others(name)))

    assert Result.objects.get(name=name).server_state == ServerState.IN_PROGRESS


def test_multiple_clients_on_one_computer_do_not_end_each_others_tasks(project, account, cpu_app):
    client = Client()
    _, name = _first_job(client, project, account, cpu_app)

    rpc(client, project, make_request(account.authenticator, cpu_req_secs=0.0, allow_multiple_clients=True))

    assert Result.objects.get(name=name).server_state == ServerState.IN_PROGRESS


def _after_reset(account, hostid: int, **overrides):
    """The request of a client whose project was reset: its hostid, no tasks listed."""
    fields = {"rpc_seqno": 1, "cpu_req_secs": 100.0, **overrides}
    return make_request(account.authenticator, hostid=hostid, other_results=(), **fields)


def test_a_lost_task_is_sent_again_with_resend_lost_results(project, account, cpu_app):
    client, hostid, name = _resending_first_job(project, account, cpu_app, n_jobs=3)

    reply = rpc(client, project, _after_reset(account, hostid))

    # Only the lost task: a reply that resends carries no new work (as BOINC).
    assert [r.name for r in reply.results] == [name]
    assert [w.name for w in reply.workunits] == [name.rsplit("_", 1)[0]]
    assert any(f"Resent lost result {name}" in m.text for m in reply.messages)
    result = Result.objects.get(name=name)
    assert result.server_state == ServerState.IN_PROGRESS
    assert Result.objects.filter(server_state=ServerState.IN_PROGRESS).count() == 1


def test_a_lost_task_is_not_sent_again_without_resend_lost_results(project, account, cpu_app):
    client = Client()
    hostid, name = _first_job(client, project, account, cpu_app, n_jobs=2)

    reply = rpc(client, project, _after_reset(account, hostid))

    assert name not in [r.name for r in reply.results]
    assert Result.objects.get(name=name).server_state == ServerState.IN_PROGRESS  # it times out later


def test_a_lost_task_no_longer_needed_is_timed_out_instead(project, account, cpu_app):
    client, hostid, name = _resending_first_job(project, account, cpu_app)
    lost = Result.objects.get(name=name)
    Workunit.objects.filter(pk=lost.workunit_id).update(canonical_result=lost)  # done elsewhere

    reply = rpc(client, project, _after_reset(account, hostid))

    assert name not in [r.name for r in reply.results]
    assert any(f"Didn't resend lost result {name} (expired)" in m.text for m in reply.messages)
    lost.refresh_from_db()
    grace = timedelta(seconds=project.report_grace_period)
    assert lost.report_deadline + grace < clock.now()  # the transitioner's next pass times it out


def test_a_lost_task_whose_bound_was_edited_past_any_date_is_resent_by_its_old_deadline(
    project, account, cpu_app
):
    client, hostid, name = _resending_first_job(project, account, cpu_app)
    old_deadline = Result.objects.get(name=name).report_deadline
    Workunit.objects.filter(name=name.rsplit("_", 1)[0]).update(delay_bound=1e300)

    reply = rpc(client, project, _after_reset(account, hostid))

    assert [r.name for r in reply.results] == [name]
    assert any(f"Resent lost result {name}" in m.text for m in reply.messages)
    assert Result.objects.get(name=name).report_deadline <= old_deadline + timedelta(seconds=1)


def _refused(reply, name: str, why: str) -> bool:
    """The reply leaves the lost result out and tells the volunteer why."""
    told = any(f"Didn't resend lost result {name} ({why})" in m.text for m in reply.messages)
    return told and name not in [r.name for r in reply.results]


def _expired(project, name: str) -> bool:
    lost = Result.objects.get(name=name)
    grace = timedelta(seconds=project.report_grace_period)
    return lost.server_state == ServerState.IN_PROGRESS and lost.report_deadline + grace < clock.now()


def test_a_lost_task_of_an_app_the_volunteer_no_longer_selects_is_timed_out_instead(
    project, account, cpu_app
):
    from apps.applications.services import app_create
    from apps.protocol.project_prefs import ProjectPrefs, ProjectPrefsDoc
    from apps.scheduler.services.prefs import account_project_prefs_save

    client, hostid, name = _resending_first_job(project, account, cpu_app, n_jobs=2)
    other = app_create(project=project, name="otherapp", user_friendly_name="Other app")
    chosen = ProjectPrefs(apps_selected=(other.id,))
    account_project_prefs_save(account=account, doc=ProjectPrefsDoc(primary=chosen))

    reply = rpc(client, project, _after_reset(account, hostid))

    assert _refused(reply, name, "application not selected")
    assert _expired(project, name)


def test_a_lost_task_of_a_deprecated_app_is_timed_out_instead(project, account, cpu_app):
    client, hostid, name = _resending_first_job(project, account, cpu_app)
    cpu_app.deprecated = True
    cpu_app.save()

    reply = rpc(client, project, _after_reset(account, hostid))

    assert _refused(reply, name, "application deprecated")
    assert _expired(project, name)


def test_a_lost_task_with_no_version_left_for_the_host_is_timed_out_instead(project, account, cpu_app):
    client, hostid, name = _resending_first_job(project, account, cpu_app)
    for version in AppVersion.objects.filter(app=cpu_app):
        version.deprecated = True
        version.save()

    reply = rpc(client, project, _after_reset(account, hostid))

    assert _refused(reply, name, "no application version for this computer")
    assert _expired(project, name)


def test_a_lost_task_stays_in_progress_when_the_request_asks_only_for_other_work(project, account, cpu_app):
    client, hostid, name = _resending_first_job(project, account, cpu_app)
    gpu_only = dict(cpu_req_secs=0.0, work_req_seconds=3600.0, coprocs=(replace(GPU, req_secs=3600.0),))

    reply = rpc(client, project, _after_reset(account, hostid, **gpu_only))

    # The host can run it and may ask for CPU work later: it is neither resent nor ended.
    assert name not in [r.name for r in reply.results]
    assert not any(name in m.text for m in reply.messages)
    assert Result.objects.get(name=name).server_state == ServerState.IN_PROGRESS
    assert not _expired(project, name)
    later = rpc(client, project, _after_reset(account, hostid, rpc_seqno=2))
    assert [r.name for r in later.results] == [name]
