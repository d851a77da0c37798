"""Targeted and broadcast jobs through the real scheduler RPC: each reaches only its
target host, user or team, and a broadcast job reaches each eligible host once."""

from dataclasses import replace
from datetime import timedelta

import pytest

from apps.hosts.models import Host
from apps.work.domain.assignments import Target, TargetType
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Assignment, Result
from apps.work.services import JobSpec, WorkError, workunit_transition, workunits_create
from tests.factories import AccountFactory, TeamFactory
from tests.scheduler.conftest import make_request, rpc

pytestmark = pytest.mark.django_db


def _job(project, app, target: Target | None, name: str = "aimed"):
    (wu,) = workunits_create(
        project=project,
        app=app,
        jobs=[JobSpec(name=name, rsc_fpops_est=1e11, rsc_fpops_bound=1e13, target=target)],
    )
    return wu


def _host(client, project, account, cpid: str) -> Host:
    """A host that made one RPC without asking for work."""
    req = make_request(account.authenticator, work_req_seconds=0.0, cpu_req_secs=0.0)
    reply = rpc(client, project, replace(req, host_info=replace(req.host_info, host_cpid=cpid)))
    return Host.objects.get(id=reply.hostid)


def _ask(client, project, host: Host) -> list[str]:
    """The result names the host gets when it asks for work."""
    req = make_request(host.account.authenticator, hostid=host.id, rpc_seqno=host.rpc_seqno + 1)
    req = replace(req, host_info=replace(req.host_info, host_cpid=host.host_cpid))
    return [r.name for r in rpc(client, project, req).results]


@pytest.fixture
def other_account(project):
    return AccountFactory(project=project)


def test_job_targeted_at_a_host_reaches_only_that_host(client, project, account, cpu_app):
    target = _host(client, project, account, "target")
    other = _host(client, project, account, "other")
    wu = _job(project, cpu_app, Target(TargetType.HOST, target.id))
    assert _ask(client, project, other) == []
    assert _ask(client, project, target) == ["aimed_0"]
    assert list(Result.objects.filter(workunit=wu).values_list("host_id", "server_state")) == [
        (target.id, ServerState.IN_PROGRESS)
    ]


def test_job_targeted_at_a_user_reaches_only_that_users_hosts(
    client, project, account, other_account, cpu_app
):
    stranger = _host(client, project, other_account, "stranger")
    mine = _host(client, project, account, "mine")
    _job(project, cpu_app, Target(TargetType.USER, account.id))
    assert _ask(client, project, stranger) == []
    assert _ask(client, project, mine) == ["aimed_0"]


def test_job_targeted_at_a_team_reaches_only_its_members_hosts(
    client, project, account, other_account, cpu_app
):
    team = TeamFactory(project=project)
    account.team = team
    account.save()
    outsider = _host(client, project, other_account, "outsider")
    member = _host(client, project, account, "member")
    _job(project, cpu_app, Target(TargetType.TEAM, team.id))
    assert _ask(client, project, outsider) == []
    assert _ask(client, project, member) == ["aimed_0"]


def test_targeted_job_needing_one_result_is_sent_once(client, project, account, cpu_app):
    first = _host(client, project, account, "first")
    second = _host(client, project, account, "second")
    _job(project, cpu_app, Target(TargetType.USER, account.id))
    assert _ask(client, project, first) == ["aimed_0"]
    assert _ask(client, project, second) == []


def test_targeted_result_that_timed_out_is_replaced_for_another_host_of_the_target(
    client, project, account, other_account, cpu_app
):
    first = _host(client, project, account, "first")
    second = _host(client, project, account, "second")
    stranger = _host(client, project, other_account, "stranger")
    wu = _job(project, cpu_app, Target(TargetType.USER, account.id))
    assert _ask(client, project, first) == ["aimed_0"]
    sent = Result.objects.get(name="aimed_0")
    workunit_transition(workunit_id=wu.id, now=sent.report_deadline + timedelta(days=30))
    assert Result.objects.get(name="aimed_0").outcome == Outcome.NO_REPLY
    assert Result.objects.filter(workunit=wu).count() == 1  # the transitioner makes none
    assert _ask(client, project, stranger) == []
    assert _ask(client, project, second) == ["aimed_1"]


def test_broadcast_job_reaches_each_host_once(client, project, account, other_account, cpu_app):
    hosts = [_host(client, project, account, "a"), _host(client, project, other_account, "b")]
    wu = _job(project, cpu_app, Target(TargetType.NONE, multi=True))
    for host in hosts:
        assert _ask(client, project, host) == [f"aimed_h{host.id}"]
    assert [_ask(client, project, host) for host in hosts] == [[], []]
    assert Result.objects.filter(workunit=wu).count() == 2


def test_broadcast_to_a_team_skips_other_hosts(client, project, account, other_account, cpu_app):
    team = TeamFactory(project=project)
    account.team = team
    account.save()
    outsider = _host(client, project, other_account, "outsider")
    member = _host(client, project, account, "member")
    _job(project, cpu_app, Target(TargetType.TEAM, team.id, multi=True))
    assert _ask(client, project, outsider) == []
    assert _ask(client, project, member) == [f"aimed_h{member.id}"]


def test_targeted_job_has_no_result_for_the_ordinary_queue(project, account, cpu_app):
    wu = _job(project, cpu_app, Target(TargetType.USER, account.id))
    assert Result.objects.filter(workunit=wu).count() == 0
    assert Assignment.objects.get(workunit=wu).target_id == account.id


def test_ordinary_jobs_still_go_to_hosts_with_no_assignment(client, project, account, other_account, cpu_app):
    stranger = _host(client, project, other_account, "stranger")
    _job(project, cpu_app, Target(TargetType.USER, account.id))
    _job(project, cpu_app, None, name="plain")
    assert _ask(client, project, stranger) == ["plain_0"]


def test_target_outside_the_project_is_refused_and_nothing_is_created(project, cpu_app):
    with pytest.raises(WorkError, match="no host with id 999999"):
        _job(project, cpu_app, Target(TargetType.HOST, 999999))
    assert Assignment.objects.count() == 0


def test_assignment_of_a_purged_workunit_is_dropped_by_the_next_rpc(client, project, account, cpu_app):
    host = _host(client, project, account, "target")
    wu = _job(project, cpu_app, Target(TargetType.HOST, host.id))
    wu.delete()  # as db_purge does, the assignment's workunit is emptied
    assert Assignment.objects.get().workunit_id is None
    assert _ask(client, project, host) == []
    assert Assignment.objects.count() == 0
