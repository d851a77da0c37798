"""Lean hosts: FIFO queues and work requests, and RPCs against the real scheduler in-process."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from apps.benchmarks.lean import (
    LeanConfig,
    LeanHost,
    QueuedJob,
    make_lean_hosts,
    resource_request,
    run_fifo,
    run_lean,
)
from apps.benchmarks.profiling import ClientSession, profile_hosts
from apps.benchmarks.project import BenchProject, bench_project_create
from apps.core.domain.resources import ProcType
from apps.emulator.domain.backoff import MIN_TRANSFER_RETRY, TRANSFER_GIVEUP
from apps.emulator.live import HostHardware, LiveConfig, UploadGate, format_summary
from apps.emulator.live.rpc import RESULT_UPLOAD_FAILED, WireJob, reported_result
from apps.protocol import FileInfoDesc, SchedulerRequest, parse_request, parse_upload_header

BUFFER = 8640.0  # 0.1 day
CPU_HOST = HostHardware(ncpus=4, cpu_flops=4e9)
GPU_HOST = HostHardware(
    ncpus=4, cpu_flops=4e9, ngpus=1, gpu_flops=2e13, gpu_name="NVIDIA GeForce RTX 3070", gpu_ram=8e9
)


def _job(name: str, seconds: float, usage: float = 1.0) -> QueuedJob:
    return QueuedJob(WireJob(name, 100, "", (), elapsed=seconds), usage, seconds)


# -- the queue and the work request (no database) -----------------------------------------


def test_empty_queue_asks_for_the_whole_buffer_on_every_instance() -> None:
    assert resource_request([], 4.0, BUFFER) == (4 * BUFFER, 4.0)


def test_queued_work_is_taken_off_the_buffer() -> None:
    queue = [_job("a", 3000.0), _job("b", 1000.0)]
    assert resource_request(queue, 4.0, BUFFER)[0] == 4 * BUFFER - 4000.0


def test_full_queue_asks_for_nothing() -> None:
    queue = [_job(str(i), 3600.0) for i in range(12)]
    assert resource_request(queue, 4.0, BUFFER) == (0.0, 0.0)


def test_instances_without_a_job_are_idle() -> None:
    queue = [_job("a", 3000.0), _job("b", 1000.0, usage=0.5)]
    assert resource_request(queue, 4.0, BUFFER)[1] == 2.5


def test_fifo_runs_one_job_per_instance_and_starts_the_next_when_one_ends() -> None:
    queue = [_job("a", 1000.0), _job("b", 1200.0), _job("c", 1000.0)]
    finished = run_fifo(queue, 2.0, 1500.0)
    assert [job.wire.result_name for job in finished] == ["a", "b"]


def test_fifo_keeps_unfinished_jobs_in_order_with_their_time_left() -> None:
    queue = [_job("a", 1000.0), _job("b", 3000.0), _job("c", 1000.0), _job("d", 1000.0)]
    run_fifo(queue, 2.0, 1500.0)  # c starts at 1000 when a ends; d waits for an instance
    assert [(job.wire.result_name, job.remaining) for job in queue] == [
        ("b", 1500.0),
        ("c", 500.0),
        ("d", 1000.0),
    ]


def test_fifo_runs_two_half_gpu_jobs_on_one_gpu() -> None:
    queue = [_job("a", 1000.0, usage=0.5), _job("b", 1000.0, usage=0.5), _job("c", 1000.0, usage=0.5)]
    assert len(run_fifo(queue, 1.0, 1000.0)) == 2


def test_config_needs_an_account_per_host() -> None:
    config = LeanConfig(
        master_url="http://example.test/p/", hardware=(CPU_HOST, CPU_HOST), authenticators=("k",)
    )
    with pytest.raises(ValueError, match="authenticator"):
        make_lean_hosts(config, UploadGate())


# -- against the real scheduler, in-process (Django's test client) --------------------------


@pytest.fixture
def project(settings, tmp_path) -> BenchProject:
    """A benchmark project answered in-process, at http://testserver/lean/."""
    settings.COBBLESTONE_BASE_URL = "http://testserver"
    settings.COBBLESTONE_DATA_DIR = str(tmp_path / "data")
    return bench_project_create(slug="lean", njobs=200, naccounts=2)


def _host(project: BenchProject, hardware: HostHardware) -> LeanHost:
    return LeanHost(
        index=0,
        hardware=hardware,
        master_url="http://testserver/lean/",
        authenticator=project.authenticators[0],
        session=ClientSession(),
        gate=UploadGate(False),
    )


@pytest.mark.django_db
def test_lean_host_gets_jobs_on_its_first_rpc(project) -> None:
    host = _host(project, CPU_HOST)
    host.step()
    assert (host.stats.rpcs, host.stats.jobs_received > 0, host.hostid > 0) == (1, True, True)


@pytest.mark.django_db
def test_finished_jobs_are_reported_later_and_every_report_is_acknowledged(project) -> None:
    host = _host(project, CPU_HOST)
    for _ in range(4):
        host.step()
    assert host.stats.results_reported > 0
    assert host.stats.results_acked == host.stats.results_reported
    assert host.stats.errors == []


class RecordingSession(ClientSession):
    """Django's test client, keeping every scheduler request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[SchedulerRequest] = []

    def request(self, method, url, body=None, *, content_type=""):
        if url.endswith("/cgi"):
            self.requests.append(parse_request(body, max_bytes=10**7))
        return super().request(method, url, body, content_type=content_type)


@pytest.mark.django_db
def test_jobs_not_finished_are_listed_as_other_results(project) -> None:
    host = _host(project, CPU_HOST)
    host.session = session = RecordingSession()
    host.step()
    held = set(host.stats.received)  # everything the first reply sent
    host.step()
    reported = {r.name for r in session.requests[1].results}
    others = {o.name for o in session.requests[1].other_results}
    assert others - reported == held - reported


@pytest.mark.django_db
def test_cpu_only_host_never_receives_gpu_jobs(project) -> None:
    host = _host(project, CPU_HOST)
    for _ in range(4):
        host.step()
    assert [name for name in host.stats.received if name.startswith("bench_gpu_")] == []


@pytest.mark.django_db
def test_gpu_host_receives_gpu_jobs(project) -> None:
    host = _host(project, GPU_HOST)
    host.step()
    assert len(host.queues[ProcType.NVIDIA]) > 0


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_run_lean_over_http_acknowledges_every_report(bench_project) -> None:
    config = LeanConfig(
        master_url=bench_project.project.master_url,
        hardware=(CPU_HOST, GPU_HOST, CPU_HOST, GPU_HOST),
        authenticators=bench_project.authenticators,
        max_seconds=3.0,
    )
    summary = run_lean(config)
    assert summary.ok, format_summary(summary)
    assert summary.results_acked > 0


@pytest.mark.django_db
def test_profile_can_drive_lean_hosts(project) -> None:
    config = LiveConfig(
        master_url="http://testserver/lean/",
        hardware=(CPU_HOST, GPU_HOST),
        authenticators=project.authenticators,
        uploads=False,
    )
    out = profile_hosts(config, rpcs=4, top=3, client="lean")
    assert out.startswith("4 RPCs")


@pytest.mark.django_db
def test_finished_jobs_upload_their_outputs(project) -> None:
    host = _host(project, CPU_HOST)
    host.gate = UploadGate()
    for _ in range(3):
        host.step()
    assert (host.stats.uploads > 0, host.stats.errors) == (True, [])


@pytest.mark.django_db
def test_a_busy_reply_is_counted_apart_and_the_reports_go_again(project, settings) -> None:
    host = _host(project, CPU_HOST)
    host.busy_wait = 3.0
    for _ in range(3):
        host.step()
    waiting = len(host.finished)
    assert waiting > 0
    settings.COBBLESTONE_SCHED_SLOTS = 1
    settings.COBBLESTONE_SCHED_QUEUE_SECONDS = 0.0  # every RPC is turned away
    host.rpc()
    assert (host.stats.busy, host.stats.errors, host.pause) == (1, [], 3.0)
    assert len(host.finished) == waiting  # not acknowledged: reported again next time
    settings.COBBLESTONE_SCHED_SLOTS = 0
    host.rpc()
    assert (host.finished, host.pause, host.stats.results_acked) == ([], 0.0, host.stats.results_reported)


class FailingUploads(ClientSession):
    """Django's test client; the first ``failures`` uploads get HTTP 502, as from a proxy
    whose upload server is down. ``tries`` lists the file of every upload asked."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.tries: list[str] = []

    def request(self, method, url, body=None, *, content_type=""):
        if url.endswith("/file_upload_handler"):
            self.tries.append(parse_upload_header(body).name)
            if len(self.tries) <= self.failures:
                return 502, b"Bad Gateway"
        return super().request(method, url, body, content_type=content_type)


def _uploading_host(project, failures: int) -> LeanHost:
    """A host whose jobs have all finished; their first ``failures`` uploads failed."""
    host = _host(project, CPU_HOST)
    host.gate = UploadGate()
    host.session = FailingUploads(failures)
    host.rpc()  # jobs arrive
    host.advance(1e6)  # they all finish and upload
    return host


@pytest.mark.django_db
def test_a_job_is_reported_only_once_its_upload_went_through(project) -> None:
    host = _uploading_host(project, failures=1)
    (waiting,) = (job.result_name for job in host.uploading)
    host.rpc()
    assert waiting not in host.stats.acked
    host.advance(MIN_TRANSFER_RETRY * 2)  # past the first backoff (at most twice the minimum)
    host.rpc()
    assert (host.uploading, waiting in host.stats.acked) == ([], True)
    assert host.stats.error_kinds == {"upload: HTTP 502": 1}


@pytest.mark.django_db
def test_a_failed_upload_waits_for_its_backoff(project) -> None:
    host = _uploading_host(project, failures=1)
    host.advance(MIN_TRANSFER_RETRY / 2 - 1)  # the shortest first backoff is not over
    assert (len(host.uploading), len(host.session.tries)) == (1, len(host.finished) + 1)


@pytest.mark.django_db
def test_a_failing_upload_is_tried_and_counted_once_per_step(project) -> None:
    host = _host(project, CPU_HOST)
    host.gate = UploadGate()
    host.session = FailingUploads(failures=10**6)
    seen: Counter[str] = Counter()
    for _ in range(4):
        host.step()
        tries = Counter(host.session.tries)
        assert all(tries[name] - seen[name] <= 1 for name in tries)
        seen = tries
    assert host.stats.error_kinds == {"upload: HTTP 502": len(host.session.tries)}
    assert host.finished == []


@pytest.mark.django_db
def test_an_upload_failing_for_90_days_fails_the_job(project) -> None:
    host = _uploading_host(project, failures=10**6)
    jobs = list(host.uploading)
    host.advance(TRANSFER_GIVEUP)
    assert (host.uploading, host.finished) == ([], jobs)
    assert host.stats.error_kinds["upload: gave up"] == len(jobs)
    assert {reported_result(job).state for job in jobs} == {RESULT_UPLOAD_FAILED}


def test_replicas_of_a_workunit_report_the_same_output() -> None:
    info = FileInfoDesc(name="wu_1_0_r1", max_nbytes=4096)
    first = WireJob("wu_1_0", 100, "", (info,), wu_name="wu_1")
    second = WireJob("wu_1_1", 100, "", (replace(info, name="wu_1_1_r1"),), wu_name="wu_1")
    assert reported_result(first).files[0].md5_cksum == reported_result(second).files[0].md5_cksum
