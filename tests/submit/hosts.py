"""Simulated hosts that run jobs through the real scheduler RPC and upload handler: each
step a host reports what it ran last time (uploading the outputs first) and asks for more."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

from django.test import Client

from apps.projects.models import Project
from apps.protocol import (
    ClientVersion,
    ReportedFile,
    ReportedResult,
    UploadRequest,
    parse_upload_reply,
    render_upload_header,
)
from apps.volunteers.models import Account
from apps.work.models import OutputFile
from tests.scheduler.conftest import PLATFORM, make_request, rpc


def output_of(result_name: str) -> bytes:
    return f"output of {result_name}\n".encode()


@dataclass
class SimHost:
    account: Account
    hostid: int = 0
    seqno: int = 0
    running: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)  # every task name, in the order sent


class SimHosts:
    def __init__(
        self, client: Client, project: Project, accounts: list[Account], *, ask_seconds: float
    ) -> None:
        self.client = client
        self.project = project
        self.ask_seconds = ask_seconds
        self.hosts = [SimHost(a) for a in accounts]

    def _upload(self, result_name: str) -> None:
        for f in OutputFile.objects.filter(result__name=result_name, result__project=self.project):
            data = output_of(result_name)
            header = render_upload_header(
                UploadRequest(
                    name=f.name,
                    max_nbytes=f.max_nbytes,
                    nbytes=len(data),
                    md5_cksum=hashlib.md5(data).hexdigest(),
                    offset=0,
                    xml_signature=f.xml_signature,
                    data_offset=0,
                    client_version=ClientVersion(7, 20, 5),
                )
            )
            response = self.client.post(
                f"/{self.project.slug}/file_upload_handler",
                data=header + data,
                content_type="application/x-www-form-urlencoded",
            )
            assert parse_upload_reply(response.content).status == 0, response.content

    def _report(self, name: str) -> ReportedResult:
        files = tuple(
            ReportedFile(
                name=f.name,
                nbytes=len(output_of(name)),
                max_nbytes=f.max_nbytes,
                md5_cksum=hashlib.md5(output_of(name)).hexdigest(),
            )
            for f in OutputFile.objects.filter(result__name=name, result__project=self.project)
        )
        return ReportedResult(
            name=name,
            final_cpu_time=90.0,
            final_elapsed_time=100.0,
            exit_status=0,
            state=5,
            platform=PLATFORM,
            version_num=100,
            app_version_num=100,
            stderr_out="<stderr_txt>done</stderr_txt>",
            files=files,
        )

    def step(self, *, work: bool = True) -> int:
        """One RPC per host; how many tasks the hosts received."""
        got = 0
        for i, h in enumerate(self.hosts):
            for name in h.running:
                self._upload(name)
            base = make_request(h.account.authenticator)
            seconds = self.ask_seconds if work else 0.0
            reply = rpc(
                self.client,
                self.project,
                replace(
                    base,
                    hostid=h.hostid,
                    rpc_seqno=h.seqno,
                    work_req_seconds=seconds,
                    cpu_req_secs=seconds,
                    cpu_req_instances=0.0,
                    host_info=replace(base.host_info, host_cpid=f"cpid{i:028d}", domain_name=f"host{i}"),
                    results=tuple(self._report(n) for n in h.running),
                ),
            )
            h.seqno += 1
            h.hostid = reply.hostid or h.hostid
            h.running = [r.name for r in reply.results]
            h.received += h.running
            got += len(reply.results)
        return got
