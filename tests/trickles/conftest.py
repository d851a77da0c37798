"""Trickle tests run real scheduler RPCs: the scheduler tests' project, app and requests."""

from __future__ import annotations

import pytest

from apps.protocol import SchedulerReply, SchedulerRequest, TrickleUp
from apps.work.models import Result
from tests.scheduler.conftest import account, cpu_app, make_jobs, make_request, others, project, rpc, worker

__all__ = ["account", "cpu_app", "project", "worker"]


def trickle(
    result_name: str, *, time: int = 1_700_000_000, variety: str = "progress", body: str = ""
) -> TrickleUp:
    content = f"<variety>{variety}</variety>\n{body}".strip()
    return TrickleUp(result_name=result_name, time=time, variety=variety, body=content)


class Volunteer:
    """One host of the test account: its first RPC got a job; later ones carry trickles."""

    def __init__(self, client, project, account) -> None:
        self.client, self.project, self.account = client, project, account
        first = rpc(client, project, make_request(account.authenticator))
        self.hostid = first.hostid
        self.seqno = 1
        self.result = Result.objects.get(name=first.results[0].name)

    def request(self, *trickles: TrickleUp) -> SchedulerRequest:
        req = make_request(
            self.account.authenticator,
            hostid=self.hostid,
            rpc_seqno=self.seqno,
            work_req_seconds=0.0,
            cpu_req_secs=0.0,
            trickle_ups=trickles,
            other_results=others(self.result.name),
        )
        self.seqno += 1
        return req

    def rpc(self, *trickles: TrickleUp, raw: bytes | None = None) -> SchedulerReply:
        return rpc(self.client, self.project, self.request(*trickles), raw=raw)


@pytest.fixture
def volunteer(client, project, account, cpu_app) -> Volunteer:
    make_jobs(project, cpu_app, 2)
    return Volunteer(client, project, account)
