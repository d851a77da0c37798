"""A host its project blocked gets BOINC's refusal through the real scheduler RPC."""

import pytest

from apps.hosts.models import Host
from apps.protocol import MessagePriority
from apps.work.domain.states import ServerState
from apps.work.models import Result
from tests.scheduler.conftest import make_jobs, make_request, reported, rpc

pytestmark = pytest.mark.django_db


def _blocked_host(client, project, account) -> Host:
    first = rpc(client, project, make_request(account.authenticator))
    host = Host.objects.get(id=first.hostid)
    host.blacklisted = True
    host.save()
    return host


def test_blocked_host_gets_boincs_message_a_days_delay_and_no_work(client, project, account, cpu_app):
    host = _blocked_host(client, project, account)
    make_jobs(project, cpu_app, 3)
    reply = rpc(client, project, make_request(account.authenticator, hostid=host.id, rpc_seqno=1))
    assert reply.results == ()
    assert [(m.text, m.priority) for m in reply.messages] == [
        ("Not accepting requests from this host", MessagePriority.LOW)
    ]
    assert reply.request_delay == 86400
    assert Result.objects.filter(server_state=ServerState.UNSENT).count() == 3


def test_blocked_host_reattaching_without_its_hostid_is_still_refused(client, project, account, cpu_app):
    _blocked_host(client, project, account)
    make_jobs(project, cpu_app, 1)
    reply = rpc(client, project, make_request(account.authenticator))  # same host_cpid, no hostid
    assert reply.results == ()
    assert reply.request_delay == 86400
    assert Host.objects.count() == 1


def test_blocked_hosts_reports_are_not_taken(client, project, account, cpu_app):
    make_jobs(project, cpu_app, 1)
    first = rpc(client, project, make_request(account.authenticator))
    Host.objects.filter(id=first.hostid).update(blacklisted=True)
    name = first.results[0].name
    reply = rpc(
        client,
        project,
        make_request(account.authenticator, hostid=first.hostid, rpc_seqno=1, results=(reported(name),)),
    )
    assert reply.result_acks == ()
    assert Result.objects.get(name=name).server_state == ServerState.IN_PROGRESS


def test_unblocked_host_gets_work_again(client, project, account, cpu_app):
    host = _blocked_host(client, project, account)
    make_jobs(project, cpu_app, 1)
    Host.objects.filter(id=host.id).update(blacklisted=False)
    reply = rpc(client, project, make_request(account.authenticator, hostid=host.id, rpc_seqno=1))
    assert len(reply.results) == 1
