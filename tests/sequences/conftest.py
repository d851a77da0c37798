"""Work sequences end to end: stock clients (as requests) against the scheduler and the daemons."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command

from apps.protocol import ReportedFile, ReportedResult, SchedulerReply
from apps.scheduler.services import scheduler_request_handle
from apps.sequences.models import WorkSequence
from apps.work.domain.states import EXIT_ABORTED_BY_PROJECT, ClientState
from apps.work.models import OutputFile, Result
from apps.work.services import JobSpec, OutputSpec
from tests.scheduler.conftest import (  # noqa: F401  (fixtures)
    account,
    cpu_app,
    make_request,
    others,
    project,
    reported,
    worker,
)

DAY = 86400.0
ABORTED = int(ClientState.ABORTED)
COMPUTE_ERROR = int(ClientState.COMPUTE_ERROR)
FAST_FLOPS = 1e9  # the CPU version's speed on a "fast" host
STEP_FPOPS = 2.6e14  # 260000 s (3 days) at FAST_FLOPS
STEP_OUTPUTS = (
    OutputSpec(open_name="state", max_nbytes=10_000_000, sequence_state=True),
    OutputSpec(open_name="report", max_nbytes=100_000),
)


def step_job(fpops: float = STEP_FPOPS, **kw: object) -> JobSpec:
    return JobSpec(outputs=STEP_OUTPUTS, rsc_fpops_est=fpops, rsc_fpops_bound=fpops * 10, **kw)  # type: ignore[arg-type]


def content(result: Result, ordinal: int) -> bytes:
    """Deterministic output: any host computing a step (of any replica chain) writes the same bytes."""
    wu = result.workunit
    seq = WorkSequence.objects.select_related("replica_of").filter(id=wu.sequence_id).first()
    name = (seq.replica_of or seq).name if seq else wu.name
    return f"{name} step {wu.sequence_index} file {ordinal}\n".encode()


@dataclass
class Computer:
    """A stock BOINC client on one computer: what it holds, and its scheduler RPCs."""

    project: object
    authenticator: str
    name: str
    p_fpops: float = FAST_FLOPS
    elapsed: float = STEP_FPOPS / FAST_FLOPS
    hostid: int = 0
    seqno: int = 0
    tasks: list[str] = field(default_factory=list)
    replies: list[SchedulerReply] = field(default_factory=list)
    faulty: bool = False  # computes wrong results
    # (sequence, step) -> how many more times it is computed wrong (a transient error); may be
    # shared by several computers, so that whichever host re-runs the step gets it wrong again.
    glitches: Counter[tuple[str, int]] = field(default_factory=Counter)
    aborted: list[str] = field(default_factory=list)  # dropped, reported on the next RPC
    uploaded: dict[str, dict[str, bytes]] = field(default_factory=dict)  # result -> file -> bytes

    def rpc(
        self,
        now: datetime,
        *,
        finish: tuple[str, ...] = (),
        fail: tuple[str, ...] = (),
        seconds: float = 1.0,
    ) -> SchedulerReply:
        """Report ``finish`` (uploading their files first), ``fail`` (crashed) and the tasks
        aborted since the last RPC, list the rest, ask for ``seconds``.

        The computer runs one task at a time, in the order it got them: the first one not reported
        is running, so of the tasks named in ``result_abort_if_not_started`` it keeps
        that one and drops the others, as the stock client does."""
        for name in finish:
            self.upload(name)
        base = make_request(self.authenticator)
        req = replace(
            base,
            hostid=self.hostid,
            rpc_seqno=self.seqno,
            work_req_seconds=seconds,
            cpu_req_secs=seconds,
            host_info=replace(
                base.host_info, p_fpops=self.p_fpops, host_cpid=self.name, domain_name=self.name
            ),
            other_results=others(*[t for t in self.tasks if t not in finish and t not in fail]),
            results=tuple(self._report(n) for n in finish)
            + tuple(reported(n, state=COMPUTE_ERROR, exit_status=1) for n in fail)
            + tuple(reported(n, state=ABORTED, exit_status=EXIT_ABORTED_BY_PROJECT) for n in self.aborted),
        )
        reply = scheduler_request_handle(project=self.project, req=req, now=now)
        self.hostid = reply.hostid or self.hostid
        self.seqno += 1
        finish = (*finish, *fail)
        running = next((t for t in self.tasks if t not in finish), None)
        dropped = [t for t in reply.result_aborts_if_not_started if t in self.tasks and t != running]
        self.aborted = dropped
        gone = set(finish) | set(reply.result_aborts) | set(dropped)
        self.tasks = [t for t in self.tasks if t not in gone] + [r.name for r in reply.results]
        self.replies.append(reply)
        return reply

    def _report(self, result_name: str) -> ReportedResult:
        """A successful report whose files carry the MD5 of what was uploaded, as a client's do."""
        files = tuple(
            ReportedFile(name=name, nbytes=len(data), max_nbytes=1e7, md5_cksum=hashlib.md5(data).hexdigest())
            for name, data in self.uploaded.pop(result_name, {}).items()
        )
        report = reported(result_name, elapsed=self.elapsed)
        return replace(report, files=files or report.files)

    def upload(self, result_name: str) -> None:
        """What the upload handler would store: the outputs the reply told the client to upload."""
        result = Result.objects.select_related("workunit", "project").get(name=result_name)
        result.project.upload_dir.mkdir(parents=True, exist_ok=True)
        wu = result.workunit
        seq = WorkSequence.objects.filter(id=wu.sequence_id).first()
        glitch = (seq.name, wu.sequence_index) if seq else None
        wrong = self.faulty or self.glitches[glitch] > 0
        if self.glitches[glitch] > 0:
            self.glitches[glitch] -= 1
        for output in OutputFile.objects.filter(result=result, upload=True):
            data = content(result, output.ordinal) + (
                f"garbage from {self.name}\n".encode() if wrong else b""
            )
            self.uploaded.setdefault(result_name, {})[output.name] = data
            (result.project.upload_dir / output.name).write_bytes(data)

    def next_task(self, sequence: WorkSequence) -> str | None:
        steps = [t for t in self.tasks if t.startswith(f"{sequence.name}_s")]
        return min(steps, key=lambda t: int(t.split("_s")[-1].split("_")[0]), default=None)


@pytest.fixture
def computer(project, account):  # noqa: F811
    def make(name: str, p_fpops: float = FAST_FLOPS) -> Computer:
        return Computer(project, account.authenticator, name, p_fpops)

    return make


def daemons(now: datetime, slug: str) -> str:
    """``run_daemons --once`` at ``now`` (the back end's round: transitioner ... sequence_deadlines)."""
    out = StringIO()
    with time_machine.travel(now, tick=False):
        call_command("run_daemons", "--once", "--project", slug, stdout=out)
    return out.getvalue()


def validate(result_name: str, now: datetime) -> None:
    """The back end's validator on the step's workunit, then the call it makes for sequences."""
    from apps.sequences.services import sequence_on_result_validated
    from apps.work.services.validator import workunit_validate

    wu_id = Result.objects.values_list("workunit_id", flat=True).get(name=result_name)
    workunit_validate(workunit_id=wu_id, now=now)
    sequence_on_result_validated(workunit_id=wu_id, now=now)
