"""Homogeneous redundancy and homogeneous app version through the scheduler RPC: once one
instance of a workunit is out, the others go only to hosts of its class and run its version."""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, replace

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from apps.applications.models import AppVersion
from apps.applications.services import AppFileSpec, app_create, app_update, app_version_add
from apps.core import clock
from apps.hosts.domain.hr import HostDescription, HrType, hr_class
from apps.hosts.models import Host
from apps.protocol import ClientAppVersion
from apps.scheduler.services import dispatch, scheduler_request_handle
from apps.scheduler.services.catalog import catalog_clear
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit
from apps.work.services.transitioner import workunit_transition
from tests.scheduler.conftest import GPU, PLATFORM, flush_paused, make_jobs, make_request, reported, rpc

pytestmark = pytest.mark.django_db

WINDOWS, MAC = "windows_x86_64", "x86_64-apple-darwin"


@dataclass(frozen=True)
class Kind:
    platform: str
    os_name: str
    vendor: str
    model: str
    gpu: bool = False


LINUX_XEON = Kind(PLATFORM, "Linux Ubuntu", "GenuineIntel", "Intel(R) Xeon(R) CPU E5-2670")
LINUX_RYZEN = Kind(PLATFORM, "Linux Debian", "AuthenticAMD", "AMD Ryzen 7 5800X")
WINDOWS_CORE = Kind(WINDOWS, "Microsoft Windows 11", "GenuineIntel", "Intel(R) Core(TM) i7-12700")
WINDOWS_RYZEN = Kind(WINDOWS, "Microsoft Windows 10", "AuthenticAMD", "AMD Ryzen 5 3600")
MAC_INTEL = Kind(MAC, "Darwin", "GenuineIntel", "Intel(R) Core(TM) i9-9880H")
FLEET = [
    *(
        replace(k, gpu=gpu)
        for k in (LINUX_XEON, LINUX_RYZEN, WINDOWS_CORE, WINDOWS_RYZEN)
        for gpu in (False, True)
    ),
    MAC_INTEL,
]


def request(
    account, kind: Kind, cpid: str, *, hostid: int = 0, seqno: int = 0, secs: float = 250.0, **overrides
):
    base = make_request(account.authenticator, cpu_req_secs=secs, work_req_seconds=secs)
    coprocs = (replace(GPU, req_secs=0.2, req_instances=0.0),) if kind.gpu else ()
    return replace(
        base,
        hostid=hostid,
        rpc_seqno=seqno,
        **{"platform_name": kind.platform, "coprocs": coprocs, **overrides},
        host_info=replace(
            base.host_info, host_cpid=cpid, os_name=kind.os_name, p_vendor=kind.vendor, p_model=kind.model
        ),
    )


class FleetHost:
    def __init__(self, account, kind: Kind, name: str) -> None:
        self.account, self.kind, self.name = account, kind, name
        self.hostid, self.seqno = 0, 0

    def ask(self, client, project, **kw):
        reply = rpc(
            client,
            project,
            request(self.account, self.kind, self.name, hostid=self.hostid, seqno=self.seqno, **kw),
        )
        if reply.hostid:
            self.hostid, self.seqno = reply.hostid, 1
        else:
            self.seqno += 1
        return reply


def add_versions(project, worker, name: str, *, num: int = 100, platforms=(PLATFORM, WINDOWS, MAC)) -> None:
    for platform in platforms:
        app_version_add(
            project=project,
            app_name=name,
            version_num=num,
            platform_name=platform,
            files=[AppFileSpec(path=worker)],
        )
        if platform != MAC:
            app_version_add(
                project=project,
                app_name=name,
                version_num=num,
                platform_name=platform,
                plan_class="cuda",
                files=[AppFileSpec(path=worker)],
            )


@pytest.fixture
def homog_app(project, worker):
    app = app_create(project=project, name="homog", homogeneous_redundancy=1, homogeneous_app_version=True)
    add_versions(project, worker, "homog")
    return app


WINDOWS_CORE_FINE = hr_class(
    HostDescription(WINDOWS_CORE.os_name, WINDOWS_CORE.vendor, WINDOWS_CORE.model), 1
)


def host_class(host: Host, hr_type: int) -> int | None:
    return hr_class(HostDescription(host.os_name, host.p_vendor, host.p_model), hr_type)


def sent_instances(wu: Workunit) -> list[Result]:
    return list(wu.results.filter(host__isnull=False).select_related("host", "app_version"))


@pytest.mark.parametrize("hr_type", [HrType.FINE, HrType.COARSE])
def test_a_mixed_fleet_never_splits_a_workunit_across_classes_or_versions(
    client, project, account, homog_app, hr_type
):
    app_update(app=homog_app, homogeneous_redundancy=hr_type)
    make_jobs(project, homog_app, 24, min_quorum=3, target_nresults=3, max_total_results=6)
    fleet = [FleetHost(account, kind, f"{kind.platform}-{i}") for i, kind in enumerate(FLEET * 2)]
    for _round in range(6):
        sent = sum(len(host.ask(client, project).results) for host in fleet)
        if not sent:
            break

    classes_used, versions_used = set(), set()
    complete = 0
    for wu in Workunit.objects.filter(app=homog_app):
        instances = sent_instances(wu)
        classes = {host_class(r.host, hr_type) for r in instances}
        versions = {r.app_version_id for r in instances}
        assert len(classes) <= 1, wu.name
        assert len(versions) <= 1, wu.name
        if instances:
            assert wu.hr_class == classes.pop()
            assert wu.app_version_id == versions.pop()
            classes_used.add(wu.hr_class)
            versions_used.add(wu.app_version_id)
        complete += len(instances) == 3
    # Not vacuous: workunits went to several classes and versions, and many ran everywhere.
    assert len(classes_used) >= 3
    assert {AppVersion.objects.get(pk=v).plan_class for v in versions_used} == {"", "cuda"}
    assert complete >= 6


def test_a_host_of_unknown_class_gets_none_of_the_apps_jobs(client, project, account, homog_app, cpu_app):
    make_jobs(project, homog_app, 3, prefix="hr")
    make_jobs(project, cpu_app, 3, prefix="plain")
    unknown = Kind(PLATFORM, "Linux", "", "")  # no CPU vendor: no fine class
    reply = FleetHost(account, unknown, "unknown").ask(client, project)
    assert [r.name.split("_")[0] for r in reply.results] == ["plain0", "plain1", "plain2"]


def test_a_host_of_unknown_class_is_told_why(client, project, account, homog_app):
    make_jobs(project, homog_app, 3)
    reply = FleetHost(account, Kind(PLATFORM, "Linux", "", ""), "unknown").ask(client, project)
    assert reply.results == ()
    assert any("homogeneous redundancy" in m.text for m in reply.messages)


def test_the_other_instances_wait_for_a_host_of_the_same_class(client, project, account, homog_app):
    make_jobs(project, homog_app, 1, min_quorum=2, target_nresults=2)
    windows = FleetHost(account, WINDOWS_CORE, "windows").ask(client, project)
    assert len(windows.results) == 1
    assert FleetHost(account, LINUX_XEON, "linux").ask(client, project).results == ()
    assert len(FleetHost(account, WINDOWS_CORE, "windows-2").ask(client, project).results) == 1


def test_the_class_is_released_when_every_instance_failed(client, project, account, homog_app):
    (wu,) = make_jobs(
        project, homog_app, 1, min_quorum=2, target_nresults=2, max_error_results=3, max_total_results=6
    )
    windows = FleetHost(account, WINDOWS_CORE, "windows")
    (sent,) = windows.ask(client, project).results
    linux = FleetHost(account, LINUX_XEON, "linux")
    assert linux.ask(client, project).results == ()
    windows.ask(client, project, secs=0.0, results=(reported(sent.name, state=3, exit_status=1),))
    workunit_transition(workunit_id=wu.id, now=clock.now())
    wu.refresh_from_db()
    assert (wu.hr_class, wu.app_version_id) == (0, None)
    assert len(linux.ask(client, project).results) == 1
    wu.refresh_from_db()
    assert wu.hr_class == host_class(Host.objects.get(pk=linux.hostid), HrType.FINE)


def test_a_host_of_a_small_class_finds_its_work_behind_a_long_queue_of_other_classes(
    client, project, account, homog_app
):
    committed = make_jobs(project, homog_app, 1000, prefix="windows", min_quorum=2, target_nresults=2)
    Workunit.objects.filter(pk__in=[wu.pk for wu in committed]).update(hr_class=WINDOWS_CORE_FINE)
    make_jobs(project, homog_app, 1, prefix="free")
    (sent,) = FleetHost(account, LINUX_XEON, "linux").ask(client, project, secs=1.0).results
    assert sent.wu_name == "free0"


def test_later_instances_run_the_committed_version_though_a_newer_one_is_released(
    client, project, account, homog_app, worker
):
    make_jobs(project, homog_app, 1, min_quorum=2, target_nresults=2)
    first = FleetHost(account, LINUX_XEON, "a").ask(client, project)
    assert first.results[0].version_num == 100
    add_versions(project, worker, "homog", num=101, platforms=(PLATFORM,))
    reply = FleetHost(account, LINUX_XEON, "b").ask(client, project)
    (second,) = reply.results
    assert second.version_num == 100
    assert [v.version_num for v in reply.app_versions] == [100]  # the client is told how to run it


def test_a_workunit_committed_to_a_test_version_waits_for_a_volunteer_who_runs_test_versions(
    client, project, account, homog_app
):
    (wu,) = make_jobs(project, homog_app, 1)
    beta = AppVersion.objects.get(app=homog_app, platform__name=PLATFORM, plan_class="")
    AppVersion.objects.filter(pk=beta.pk).update(beta=True)
    catalog_clear()
    Workunit.objects.filter(pk=wu.pk).update(app_version=beta)
    # The host could run the test version's job on its CPU, and the released CUDA version.
    assert FleetHost(account, replace(LINUX_XEON, gpu=True), "a").ask(client, project).results == ()


def test_a_cpu_host_waits_while_the_workunit_is_committed_to_the_gpu_version(
    client, project, account, homog_app
):
    make_jobs(project, homog_app, 1, min_quorum=2, target_nresults=2)
    (gpu_job,) = FleetHost(account, replace(LINUX_XEON, gpu=True), "gpu").ask(client, project).results
    assert gpu_job.plan_class == "cuda"
    assert FleetHost(account, LINUX_XEON, "cpu").ask(client, project).results == ()
    (second,) = FleetHost(account, replace(LINUX_XEON, gpu=True), "gpu-2").ask(client, project).results
    assert second.plan_class == "cuda"


def deprecate(app, num: int) -> None:
    AppVersion.objects.filter(app=app, version_num=num).update(deprecated=True)
    catalog_clear()  # as saving it in the admin does


def test_a_deprecated_committed_version_holds_while_an_instance_is_in_progress(
    client, project, account, homog_app, worker
):
    make_jobs(project, homog_app, 1, min_quorum=2, target_nresults=2)
    FleetHost(account, LINUX_XEON, "a").ask(client, project)
    add_versions(project, worker, "homog", num=101, platforms=(PLATFORM,))
    deprecate(homog_app, 100)
    assert FleetHost(account, LINUX_XEON, "b").ask(client, project).results == ()


def test_a_deprecated_committed_version_is_released_once_no_instance_is_in_progress(
    client, project, account, homog_app, worker
):
    (wu,) = make_jobs(project, homog_app, 1, min_quorum=2, target_nresults=2)
    first = FleetHost(account, LINUX_XEON, "a")
    (sent,) = first.ask(client, project).results
    first.ask(client, project, secs=0.0, results=(reported(sent.name),))
    add_versions(project, worker, "homog", num=101, platforms=(PLATFORM,))
    deprecate(homog_app, 100)
    (second,) = FleetHost(account, LINUX_XEON, "b").ask(client, project).results
    assert second.version_num == 101
    wu.refresh_from_db()
    assert wu.app_version.version_num == 101


def test_an_imported_commitment_is_kept(client, project, account, homog_app):
    # The importer stores BOINC's workunit.app_version_id and hr_class in these fields.
    (wu,) = make_jobs(project, homog_app, 1)
    cuda = AppVersion.objects.get(app=homog_app, platform__name=PLATFORM, plan_class="cuda")
    linux_ryzen = hr_class(
        HostDescription(LINUX_RYZEN.os_name, LINUX_RYZEN.vendor, LINUX_RYZEN.model), HrType.FINE
    )
    Workunit.objects.filter(pk=wu.pk).update(app_version=cuda, hr_class=linux_ryzen)
    assert FleetHost(account, replace(LINUX_XEON, gpu=True), "xeon").ask(client, project).results == ()
    assert FleetHost(account, LINUX_RYZEN, "ryzen-cpu").ask(client, project).results == ()
    (sent,) = FleetHost(account, replace(LINUX_RYZEN, gpu=True), "ryzen-gpu").ask(client, project).results
    assert sent.plan_class == "cuda"


def test_a_stored_class_binds_nothing_while_the_app_has_no_homogeneous_redundancy(
    client, project, account, homog_app
):
    app_update(app=homog_app, homogeneous_redundancy=0)
    (wu,) = make_jobs(project, homog_app, 1)
    Workunit.objects.filter(pk=wu.pk).update(hr_class=WINDOWS_CORE_FINE)  # as imported from BOINC
    assert len(FleetHost(account, LINUX_XEON, "linux").ask(client, project).results) == 1


def test_anonymous_platform_gets_no_job_of_a_homogeneous_version_app(client, project, account, homog_app):
    make_jobs(project, homog_app, 1)
    cav = ClientAppVersion(app_name="homog", version_num=100, platform=PLATFORM, avg_ncpus=1.0, flops=1e9)
    req = request(account, LINUX_XEON, "anon", platform_name="anonymous", app_versions=(cav,))
    reply = rpc(client, project, req)
    assert reply.results == ()


def test_each_job_sent_of_a_homogeneous_app_costs_one_statement(client, project, account, homog_app):
    make_jobs(project, homog_app, 10)
    host = FleetHost(account, LINUX_XEON, "a")
    host.ask(client, project, secs=1.0)

    def statements(instances: float) -> tuple[int, int]:
        req = request(account, LINUX_XEON, "a", hostid=host.hostid, seqno=host.seqno, secs=0.0)
        req = replace(req, cpu_req_instances=instances)
        host.seqno += 1
        with CaptureQueriesContext(connection) as queries:
            reply = rpc(client, project, req)
        return len(queries), len(reply.results)

    one, sent_one = statements(1.0)
    four, sent_four = statements(4.0)
    assert (sent_one, sent_four) == (1, 4)
    assert four == one + 3


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one RPC at a time")
@pytest.mark.django_db(transaction=True)
@pytest.mark.postgres
def test_two_hosts_of_different_classes_at_once_never_both_get_a_workunit(
    project, account, homog_app, monkeypatch
):
    make_jobs(project, homog_app, 10, min_quorum=2, target_nresults=2)
    dispatch._typical_fpops[homog_app.id] = 1e11
    # Windows pauses after its sends are committed to its class, before writing them, until
    # Linux is about to write its own (or 2 s): both hold candidate results of the same workunits.
    a_waits = flush_paused(monkeypatch, "windows")
    errors: list[BaseException] = []

    def host_rpc(kind: Kind) -> None:
        try:
            req = request(account, kind, threading.current_thread().name)
            scheduler_request_handle(project=project, req=req, now=clock.now())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    a = threading.Thread(target=host_rpc, args=(WINDOWS_CORE,), name="windows")
    a.start()
    assert a_waits.wait(20)
    b = threading.Thread(target=host_rpc, args=(LINUX_XEON,), name="linux")
    b.start()
    a.join(30)
    b.join(30)
    assert not errors
    platforms = defaultdict(set)
    for r in Result.objects.filter(server_state=ServerState.IN_PROGRESS).select_related("host"):
        platforms[r.workunit_id].add(r.host.os_name)
    assert platforms  # both sent something
    assert {len(p) for p in platforms.values()} == {1}
    assert {os for p in platforms.values() for os in p} == {WINDOWS_CORE.os_name, LINUX_XEON.os_name}
