"""The live host against an in-memory scheduler: requests, replies, reports and uploads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from apps.core.domain.resources import ProcType
from apps.emulator.live import LIVE_PREFS, HostHardware, LiveHost, UploadGate, varied_hardware
from apps.emulator.live.run import LiveConfig, make_hosts, summarize
from apps.protocol import (
    AppVersionDesc,
    CoprocUsage,
    FileInfoDesc,
    FileRef,
    ResultDesc,
    SchedulerReply,
    WorkunitDesc,
    parse_request,
    parse_upload_header,
    render_reply,
    render_upload_reply,
)

MASTER = "http://example.test/proj/"
GPU_HOST = HostHardware(ncpus=4, cpu_flops=4e9, ngpus=1, gpu_flops=2e13, gpu_name="GPU", gpu_ram=8e9)


class FakeServer:
    """Answers scheduler RPCs with one CPU and one GPU job per request, and stores uploads."""

    def __init__(self, *, uploads: int = 200, busy_uploads: int = 0) -> None:
        self.requests = []
        self.uploads: list[str] = []
        self.upload_status = uploads
        self.busy_uploads = busy_uploads  # the first ones are answered "try later" (status 1)
        self.upload_tries = 0
        self.n = 0

    def request(self, method, url, body=None, *, content_type=""):
        if url.endswith("/cgi"):
            req = parse_request(body, max_bytes=10**7)
            self.requests.append(req)
            return 200, render_reply(self.reply(req))
        if url.endswith("file_upload_handler"):
            if self.upload_status != 200:
                return self.upload_status, b"not here"
            self.upload_tries += 1
            if self.upload_tries <= self.busy_uploads:
                return 200, render_upload_reply(1, "try later")
            self.uploads.append(parse_upload_header(body).name)
            return 200, render_upload_reply(0)
        return 404, b""

    def close(self) -> None:
        return None

    def reply(self, req) -> SchedulerReply:
        wus, results, infos = [], [], []
        # Jobs of 15 minutes on a 4 GFLOPS CPU, and of 10 minutes on a 20 TFLOPS GPU.
        wanted = [(100, "", 3.6e12)] if (req.cpu_req_secs or req.work_req_seconds) else []
        if req.coproc(ProcType.NVIDIA) and req.coproc(ProcType.NVIDIA).req_secs:
            wanted.append((101, "cuda", 1.2e16))
        for version, plan, fpops in wanted:
            self.n += 1
            name = f"job{self.n}"
            wus.append(WorkunitDesc(name=name, app_name="app", version_num=version, rsc_fpops_est=fpops))
            out = f"{name}_0_r0"
            infos.append(
                FileInfoDesc(name=out, upload_urls=(MASTER + "file_upload_handler",), max_nbytes=1000)
            )
            results.append(
                ResultDesc(
                    name=f"{name}_0",
                    wu_name=name,
                    report_deadline=2e9,
                    version_num=version,
                    plan_class=plan,
                    file_refs=(FileRef(file_name=out, open_name="out"),),
                )
            )
        return SchedulerReply(
            hostid=7 if req.hostid == 0 else None,
            request_delay=0,
            file_infos=tuple(infos),
            app_versions=(
                AppVersionDesc(app_name="app", version_num=100, platform="x86_64-pc-linux-gnu", flops=4e9),
                AppVersionDesc(
                    app_name="app",
                    version_num=101,
                    platform="x86_64-pc-linux-gnu",
                    plan_class="cuda",
                    flops=2e13,
                    coprocs=(CoprocUsage(type=ProcType.NVIDIA, count=1),),
                ),
            ),
            workunits=tuple(wus),
            results=tuple(results),
            result_acks=tuple(r.name for r in req.results),
            code_sign_key="1024\nabc\n.\n" if not req.code_sign_key else None,
        )


def _host(
    server: FakeServer, *, policy: str = "rec", hardware: HostHardware = GPU_HOST, gate=None, index: int = 0
) -> LiveHost:
    return LiveHost(
        index=index,
        hardware=hardware,
        master_url=MASTER,
        authenticator="key",
        policy=policy,
        prefs=LIVE_PREFS,
        gate=gate or UploadGate(),
        session=server,
        report_delay=0.0,
    )


def _run(host: LiveHost, hours: float = 3.0) -> None:
    host.decide(preempt=True)
    for _ in range(100_000):
        if host.state.now >= hours * 3600:
            return
        host.advance(min(host.next_event(hours * 3600), hours * 3600))
        host.decide(preempt=False)


def test_first_request_is_a_new_host() -> None:
    server = FakeServer()
    _host(server).decide(preempt=True)
    assert (server.requests[0].hostid, server.requests[0].rpc_seqno) == (0, 0)


def test_host_keeps_its_id_sequence_number_and_code_sign_key() -> None:
    server = FakeServer()
    _run(_host(server), hours=1)
    later = server.requests[-1]
    assert (later.hostid, later.rpc_seqno > 0, later.code_sign_key.startswith("1024")) == (7, True, True)


def test_gpu_host_asks_for_gpu_work_in_its_coproc() -> None:
    server = FakeServer()
    _host(server).decide(preempt=True)
    assert server.requests[0].coproc(ProcType.NVIDIA).req_secs > 0


def test_v4_host_sends_an_old_style_request_without_coprocessors() -> None:
    server = FakeServer()
    _host(server, policy="v4").decide(preempt=True)
    req = server.requests[0]
    assert (req.cpu_req_secs, req.coprocs, req.work_req_seconds > 0) == (None, (), True)


def test_finished_job_is_reported_uploaded_and_acknowledged() -> None:
    server = FakeServer()
    host = _host(server)
    _run(host)
    reported = [r for req in server.requests for r in req.results]
    assert reported
    assert all(r.state == 5 and r.exit_status == 0 for r in reported)
    assert {f.name for r in reported for f in r.files} <= set(server.uploads)
    assert host.stats.results_acked == host.stats.results_reported == len(reported)


def test_reported_elapsed_time_is_the_time_the_job_ran() -> None:
    server = FakeServer()
    _run(_host(server, hardware=HostHardware(ncpus=1, cpu_flops=4e9)))
    report = next(r for req in server.requests for r in req.results)
    assert 0.8 * 900 <= report.final_elapsed_time <= 1.2 * 900  # 3.6e12 at 4 GFLOPS, +/- 20%


def test_missing_upload_handler_turns_uploads_off_without_error() -> None:
    server = FakeServer(uploads=404)
    gate = UploadGate()
    host = _host(server, gate=gate)
    _run(host)
    assert (gate.enabled, host.stats.errors, "404" in gate.reason) == (False, [], True)


def test_an_upload_the_server_cannot_take_now_is_retried_before_the_job_is_reported() -> None:
    server = FakeServer(busy_uploads=1)
    host = _host(server, hardware=HostHardware(ncpus=1, cpu_flops=4e9))
    host.decide(preempt=True)  # a CPU job of 720 to 1080 s
    host.advance(1100.0)
    assert (host.finished, len(host.uploading), server.uploads) == ([], 1, [])
    (job,) = host.uploading
    host.advance(host.next_event(1e6))  # the end of its backoff
    assert (host.uploading, [j for _, j in host.finished], server.uploads) == (
        [],
        [job],
        [job.outputs[0].name],
    )
    host.rpc(None)
    assert [r.state for r in server.requests[-1].results] == [5]
    assert host.stats.error_kinds == {"upload: try later (status 1)": 1}


def test_unacknowledged_result_is_an_error_and_reported_again() -> None:
    server = FakeServer()
    original = server.reply
    server.reply = lambda req: replace(original(req), result_acks=())
    host = _host(server)
    _run(host, hours=2)
    assert host.stats.errors
    assert host.finished


def test_result_sent_to_two_hosts_is_an_error() -> None:
    hosts = [_host(FakeServer(), index=0), _host(FakeServer(), index=1)]  # both servers name it job1_0
    for host in hosts:
        host.decide(preempt=True)
    summary = summarize(hosts, 1.0, UploadGate())
    assert "job1_0 was sent to host 0 and host 1" in summary.errors


def test_varied_hardware_gives_a_third_of_hosts_gpus() -> None:
    hosts = varied_hardware(30)
    assert sum(1 for h in hosts if h.ngpus) == 10


def test_config_needs_an_account_per_host() -> None:
    config = LiveConfig(master_url=MASTER, hardware=(GPU_HOST, GPU_HOST), authenticators=("one",))
    with pytest.raises(ValueError, match="authenticator"):
        make_hosts(config, UploadGate())
