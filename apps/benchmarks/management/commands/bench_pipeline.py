"""bench_pipeline: workunits per second through the whole pipeline, embedded and distributed.

Every run uses a throwaway database and data area, never the configured ones:

* embedded: an SQLite file; in one process, simulated hosts speak the XML protocol to the
  scheduler view in-process and the daemons of a job's life (``PIPELINE``) run inline after
  each round of RPCs until every workunit is assimilated and its files are deleted.
* distributed (when COBBLESTONE_TEST_DATABASE_URL or DATABASE_URL names a PostgreSQL server and
  COBBLESTONE_TEST_REDIS_URL or CELERY_BROKER_URL a Redis one): a fresh PostgreSQL database,
  two gunicorn web processes and two Celery workers on loopback; simulated hosts talk HTTP to
  both web processes and the daemon tasks are sent to the workers (two of each at a time, so
  the claims are exercised) until every workunit is assimilated.

The schema comes from ``migrate``; while the migrations lag behind the models (during
development) it is created from the models instead (``migrate --run-syncdb`` with migrations
off), and the table says which.

Simulated hosts compute instantly and upload deterministic outputs, so replicas agree. Outputs
go through the upload handler when the project has one (``/<slug>/file_upload_handler``);
otherwise they are written into the upload area and marked uploaded directly (what the
handler does). ``--role`` runs one part in a subprocess; the orchestrating run starts them.
``tests/backend/test_distributed.py`` runs the distributed setup with ``run_distributed``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import Resolver404, resolve

from apps.benchmarks.stack import ManagedProcess, admin_sql, free_port, port_open, tree_cpu_seconds, with_db
from apps.benchmarks.stage_meter import FLUSH_SECONDS, stage_totals_read
from apps.benchmarks.support import (
    last_json,
    machine_description,
    postgres_cpu_seconds,
    postmaster_pid,
    run_manage,
    schema_create,
)

BASE_DIR = Path(settings.BASE_DIR)
# The daemons of a job's life, in the order a round runs them (the transitioner twice: after
# the reports, and after validation). The others (feeder, db_purge, sequence_deadlines) run
# every few minutes or hours on a real server, not after every round of RPCs; db_purge is
# measured once every workunit is done.
PIPELINE = ("transitioner", "validator", "assimilator", "transitioner", "file_deleter")
PLATFORM = "x86_64-pc-linux-gnu"
SLUG = "bench"
APP = "bench"
Post = Callable[[str, bytes], bytes]


# --- the parts, run with --role in a process whose DATABASE_URL is the throwaway database ----


def record_assimilation(workunit: Any, canonical_result: Any, output_paths: list[Path]) -> str:
    """An assimilator hook that copies the outputs and logs the workunit's name once per call,
    so a check can prove no workunit was handed over twice."""
    from apps.work.services.assimilator import copy_outputs

    path = copy_outputs(workunit, canonical_result, output_paths)
    log = workunit.project.results_dir / "assimilated.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{workunit.name}\n".encode())
    finally:
        os.close(fd)
    return path


def pipeline_setup(*, jobs: int, hosts: int, min_quorum: int = 2, slug: str = SLUG) -> dict[str, Any]:
    """A project ``slug`` with one app (bitwise validator, recording assimilator), a version
    for Linux, ``jobs`` workunits and one account per simulated host."""
    from apps.applications.services import AppFileSpec, app_create, app_version_add
    from apps.projects.services import project_create
    from apps.volunteers.models import Account, Team, make_passwd_hash
    from apps.work.services import JobSpec, workunits_create

    project = project_create(slug=slug, name="Pipeline bench").project
    project.request_delay = 0
    # The simulated hosts do months of jobs in minutes: no daily quota may stop them.
    project.daily_result_quota = 10**7
    project.save()
    app = app_create(
        project=project,
        name=APP,
        min_quorum=min_quorum,
        target_nresults=min_quorum,
        assimilator=f"{__name__}.record_assimilation",
    )
    worker = project.data_dir / "worker.sh"
    worker.write_text("#!/bin/sh\necho done\n")
    app_version_add(
        project=project,
        app_name=APP,
        version_num=100,
        platform_name=PLATFORM,
        files=[AppFileSpec(path=worker)],
    )
    specs = [JobSpec(name=f"job{i:05d}", rsc_fpops_est=1e11, rsc_fpops_bound=1e13) for i in range(jobs)]
    for start in range(0, jobs, 500):
        workunits_create(project=project, app=app, jobs=specs[start : start + 500])
    team = Team.objects.create(project=project, name="Bench team")
    keys = []
    for i in range(hosts):
        email = f"host{i}@{slug}.example.com"
        account = Account.objects.create(
            project=project, name=f"host{i}", email_addr=email, passwd_hash=make_passwd_hash(None), team=team
        )
        keys.append(account.authenticator)
    return {"slug": slug, "authenticators": keys}


@dataclass
class SimulatedHost:
    """A BOINC client reduced to the protocol: fetch work, "compute", upload, report."""

    authenticator: str
    post: Post
    name: str
    slug: str = SLUG
    hostid: int = 0
    seqno: int = 0
    to_report: list[Any] = field(default_factory=list)
    got: int = 0

    def rpc(self) -> int:
        """One scheduler RPC; returns the number of new tasks (all completed at once)."""
        from apps.protocol import HostInfo, SchedulerRequest, TimeStats, parse_reply, render_request

        self.seqno += 1
        req = SchedulerRequest(
            authenticator=self.authenticator,
            hostid=self.hostid,
            rpc_seqno=self.seqno,
            core_client_major_version=7,
            core_client_minor_version=20,
            core_client_release=5,
            work_req_seconds=86400.0,
            cpu_req_secs=86400.0,
            cpu_req_instances=4.0,
            platform_name=PLATFORM,
            time_stats=TimeStats(on_frac=1.0, active_frac=1.0, gpu_active_frac=1.0),
            host_info=HostInfo(
                p_ncpus=4,
                p_fpops=2e9,
                p_iops=2e9,
                m_nbytes=16e9,
                d_total=5e11,
                d_free=2e11,
                host_cpid=hashlib.md5(self.name.encode()).hexdigest(),
                domain_name=self.name,
                os_name="Linux Debian",
            ),
            results=tuple(self.to_report),
            other_results=(),
        )
        reply = parse_reply(self.post(f"/{self.slug}/cgi", render_request(req)))
        self.to_report = []
        self.hostid = reply.hostid or self.hostid
        uploads = {f.name: f for f in reply.file_infos if f.is_upload}
        for task in reply.results:
            self.to_report.append(self._compute(task, uploads))
        self.got += len(reply.results)
        return len(reply.results)

    def _compute(self, task: Any, uploads: dict[str, Any]) -> Any:
        from apps.protocol import ReportedFile, ReportedResult

        files = []
        for ref in task.file_refs:
            info = uploads.get(ref.file_name)
            if info is None:
                continue
            data = f"{task.wu_name} {int(hashlib.md5(task.wu_name.encode()).hexdigest()[:8], 16)}\n".encode()
            md5 = hashlib.md5(data).hexdigest()
            upload_output(self.post, info, data, md5, slug=self.slug)
            files.append(
                ReportedFile(
                    name=info.name, nbytes=len(data), max_nbytes=info.max_nbytes or 1e6, md5_cksum=md5
                )
            )
        elapsed = 500.0 + random.random() * 100
        return ReportedResult(
            name=task.name,
            final_cpu_time=elapsed * 0.95,
            final_elapsed_time=elapsed,
            exit_status=0,
            state=5,
            platform=PLATFORM,
            version_num=100,
            app_version_num=100,
            stderr_out="<stderr_txt>bench</stderr_txt>",
            files=tuple(files),
        )


def _has_upload_handler(slug: str) -> bool:
    try:
        resolve(f"/{slug}/file_upload_handler")
    except Resolver404:
        return False
    return True


def upload_output(post: Post, info: Any, data: bytes, md5: str, *, slug: str = SLUG) -> None:
    """Through the upload handler when there is one, else straight into the upload area."""
    if _has_upload_handler(slug):
        from apps.protocol.upload import UploadRequest, parse_upload_reply, render_upload_header

        header = render_upload_header(
            UploadRequest(
                name=info.name,
                max_nbytes=int(info.max_nbytes or 1e6),
                nbytes=len(data),
                md5_cksum=md5,
                offset=0,
                xml_signature=info.xml_signature or "",
                data_offset=0,
            )
        )
        reply = parse_upload_reply(post(f"/{slug}/file_upload_handler", header + data))
        if reply.status != 0:
            raise RuntimeError(f"upload of {info.name} refused: {reply.message}")
        return
    from apps.projects.models import Project
    from apps.work.models import OutputFile

    upload_dir = Project.objects.get(slug=slug).upload_dir
    upload_dir.mkdir(parents=True, exist_ok=True)
    (upload_dir / info.name).write_bytes(data)
    OutputFile.objects.filter(name=info.name).update(uploaded=True, nbytes=len(data), md5_cksum=md5)


def http_post(base_url: str) -> Post:
    def post(path: str, body: bytes) -> bytes:
        request = urllib.request.Request(
            base_url + path, data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return bytes(response.read())

    return post


def inprocess_post() -> Post:
    from django.test import Client

    client = Client()

    def post(path: str, body: bytes) -> bytes:
        response = client.post(path, data=body, content_type="application/x-www-form-urlencoded")
        if response.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {response.status_code}")
        return bytes(response.content)

    return post


def pipeline_counts() -> dict[str, int]:
    from apps.work.domain.states import AssimilateState, FileDeleteState
    from apps.work.models import Workunit

    wus = Workunit.objects.filter(project__slug=SLUG)
    return {
        "workunits": wus.count(),
        "assimilated": wus.filter(assimilate_state=AssimilateState.DONE).count(),
        "files_left": wus.exclude(file_delete_state=FileDeleteState.DONE).count(),
    }


def run_embedded_role(jobs: int, hosts: int) -> dict[str, Any]:
    """Setup, then hosts and inline daemon rounds until every workunit is assimilated and its
    files are deleted; then db_purge as if the purge age had passed. The stages' costs are
    metered in this process (apps.benchmarks.stage_meter)."""
    from apps.benchmarks.stage_meter import stage_meter_enable, stage_totals
    from apps.work.services.daemons import PassOptions, daemon_run

    setup = pipeline_setup(jobs=jobs, hosts=hosts)
    post = inprocess_post()
    sims = [SimulatedHost(key, post, f"host{i}") for i, key in enumerate(setup["authenticators"])]
    stage_meter_enable()
    start, cpu_start = time.monotonic(), time.process_time()
    rounds = assimilated = 0
    last_progress = start
    while True:
        rounds += 1
        if rounds > 200 + jobs:
            raise RuntimeError(f"no progress: {pipeline_counts()}")
        for sim in sims:
            sim.rpc()
        passes = [(name, daemon_run(name, slug=SLUG)) for name in PIPELINE]
        assimilated += sum(p.items for name, p in passes if name == "assimilator")
        deleted = sum(p.items for name, p in passes if name == "file_deleter")
        if assimilated >= jobs and not deleted and not pipeline_counts()["files_left"]:
            break
        if time.monotonic() - last_progress > 10:
            last_progress = time.monotonic()
            print(
                f"{time.strftime('%H:%M:%S')} assimilated {assimilated}/{jobs}", file=sys.stderr, flush=True
            )
    seconds, cpu = time.monotonic() - start, time.process_time() - cpu_start
    # db_purge as it runs once the purge age has passed: every workunit archived and deleted.
    purge_start = time.monotonic()
    while daemon_run("db_purge", slug=SLUG, options=PassOptions(purge_min_age_days=0)).items:
        pass
    return {
        "jobs": jobs,
        "seconds": seconds,
        "rate": jobs / seconds,
        "rounds": rounds,
        "cpu": cpu,
        "purge_seconds": time.monotonic() - purge_start,
        "stages": stage_totals(),
    }


def run_clients_role(urls: list[str], authenticators: list[str], stop_file: Path) -> None:
    """Simulated hosts (one thread each) over HTTP, spread over ``urls``, until ``stop_file``."""

    def loop(sim: SimulatedHost) -> None:
        while not stop_file.exists():
            try:
                if not sim.rpc() and not sim.to_report:
                    time.sleep(1.0)  # nothing to do: a real client waits far longer
            except Exception as exc:  # a refused connection during start-up: try again
                print(f"{sim.name}: {exc}", file=sys.stderr, flush=True)
                time.sleep(0.5)

    threads = [
        threading.Thread(target=loop, args=(SimulatedHost(key, http_post(urls[i % len(urls)]), f"host{i}"),))
        for i, key in enumerate(authenticators)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# --- the orchestrating side: processes, databases, the distributed run ---------------------------


def _manage(role_args: list[str], env: dict[str, str], timeout: float = 300) -> str:
    return run_manage("bench_pipeline", role_args, env, timeout=timeout)


@dataclass(frozen=True, slots=True)
class DistributedOutcome:
    jobs: int
    seconds: float
    assimilated: int
    assimilation_log: list[str]
    results_not_over: int
    results_not_valid: int
    accounts_with_credit: int
    accounts_with_valid_results: int
    daemon_runs: dict[str, int]
    schema: str
    upload: str
    stages: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)  # web, workers, PostgreSQL, clients

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0


_connections: dict[str, Any] = {}


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    """One statement on the benchmark's database over a kept connection: the driver polls
    many times a second, and a connection per poll cost PostgreSQL more than some daemons."""
    import psycopg

    conn = _connections.get(url)
    if conn is None or conn.closed:
        conn = _connections[url] = psycopg.connect(url, autocommit=True)
    return list(conn.execute(sql).fetchall())


def _query_close(url: str) -> None:
    conn = _connections.pop(url, None)
    if conn is not None:
        conn.close()


def run_distributed(
    *,
    pg_url: str,
    redis_url: str,
    jobs: int = 300,
    hosts: int = 8,
    timeout: float = 150,
    log: Callable[[str], None] = print,
) -> DistributedOutcome:
    """The distributed setup on loopback: fresh database, 2 web + 2 worker processes, clients."""
    from celery import Celery

    token = f"{os.getpid()}_{random.randrange(1 << 30)}"
    db_name = f"cobblestone_dist_{token}"
    db_url = with_db(pg_url, db_name)
    queue = f"bench-{token}"
    work = Path(tempfile.mkdtemp(prefix="cobblestone-dist-"))
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "CELERY_BROKER_URL": redis_url,
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "PYTHONPATH": str(BASE_DIR),
        "DEBUG": "false",
        "SECRET_KEY": "bench-" + token,
        "LOG_LEVEL": "WARNING",
        "COBBLESTONE_STAGE_METER_DIR": str(work / "stages"),
    }
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    (work / "stages").mkdir()
    procs: list[ManagedProcess] = []
    stop_file = work / "stop"
    admin_sql(pg_url, f'CREATE DATABASE "{db_name}"')
    try:
        schema = last_json(_manage(["--role", "schema"], env))["schema"]
        setup = last_json(_manage(["--role", "setup", "--jobs", str(jobs), "--hosts", str(hosts)], env))
        log(f"database {db_name}: schema from {schema}; {jobs} workunits, {hosts} hosts")
        bin_dir = Path(sys.executable).parent
        ports = [free_port(), free_port()]
        for port in ports:
            procs.append(
                ManagedProcess(
                    name=f"gunicorn:{port}",
                    command=[str(bin_dir / "gunicorn"), "boincproj.wsgi", "--bind", f"127.0.0.1:{port}", "--workers",
                             "2", "--threads", "4", "--timeout", "120", "--log-level", "warning"],
                    env=env, cwd=BASE_DIR, log_path=work / f"gunicorn-{port}.log", ready=partial(port_open, port),
                )
            )  # fmt: skip
        for i in range(2):
            procs.append(
                ManagedProcess(
                    name=f"worker{i}",
                    command=[str(bin_dir / "celery"), "-A", "boincproj", "worker", "-Q", queue, "--concurrency", "2",
                             "--hostname", f"bench{i}-{token}@%h", "--without-mingle", "--without-gossip",
                             "--loglevel", "WARNING"],
                    env=env, cwd=BASE_DIR, log_path=work / f"worker{i}.log",
                )
            )  # fmt: skip
        for proc in procs:
            proc.start()
        servers = list(procs)
        cpu_before = {p.name: tree_cpu_seconds(p.pid) for p in servers}
        db_server = postmaster_pid(db_url)
        db_before = postgres_cpu_seconds(db_server)
        urls = ",".join(f"http://127.0.0.1:{p}" for p in ports)
        clients = ManagedProcess(
            name="clients",
            command=[sys.executable, str(BASE_DIR / "manage.py"), "bench_pipeline", "--role", "clients", "--urls", urls,
                     "--authenticators", ",".join(setup["authenticators"]), "--stop-file", str(stop_file)],
            env=env, cwd=BASE_DIR, log_path=work / "clients.log",
        )  # fmt: skip
        procs.append(clients)
        clients.start()
        # The clock starts with the first job sent, not while the clients' process imports Django.
        start = _first_dispatch(db_url, time.monotonic() + timeout)
        broker = Celery(broker=redis_url)
        assimilated = _drive(broker, queue, db_url, jobs, start + timeout, log)
        seconds = time.monotonic() - start
        stop_file.touch()
        clients_cpu = tree_cpu_seconds(clients.pid)
        outcome = _collect(db_url, work, jobs, seconds, assimilated, schema)
        _purge_all(broker, queue, db_url, start + timeout)
        time.sleep(2 * FLUSH_SECONDS)  # the processes' last stage totals reach their files
        used = {p.name: tree_cpu_seconds(p.pid) - cpu_before[p.name] for p in servers}
        cpu = {
            "web processes": sum(v for k, v in used.items() if k.startswith("gunicorn")),
            "Celery workers": sum(v for k, v in used.items() if k.startswith("worker")),
            "PostgreSQL": postgres_cpu_seconds(db_server) - db_before,
            "load generator": clients_cpu,
        }
        return dataclasses.replace(outcome, stages=stage_totals_read(work / "stages"), cpu=cpu)
    finally:
        stop_file.touch()
        for proc in reversed(procs):
            proc.stop()
        _query_close(db_url)
        shutil.rmtree(work, ignore_errors=True)
        try:
            admin_sql(pg_url, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
        except Exception as exc:
            log(f"could not drop {db_name}: {exc}")


# The distributed run sends PIPELINE's tasks one stage after the other, two tasks per stage so
# both workers claim from the same rows.
STAGES = tuple(
    {"transitioner": "work.transition", "validator": "work.validate", "assimilator": "work.assimilate",
     "file_deleter": "work.file_delete"}[name]
    for name in PIPELINE
)  # fmt: skip


def _drive(
    broker: Any, queue: str, db_url: str, jobs: int, deadline: float, log: Callable[[str], None]
) -> int:
    """Send the daemon tasks stage by stage (as beat would, without waiting for its timer)
    until every workunit is assimilated and its files deleted; each stage waits for its tasks
    to finish."""
    assimilated, last_log = 0, 0.0
    while time.monotonic() < deadline:
        for name in STAGES:
            ids = [broker.send_task(name, queue=queue).id for _ in range(2)]
            _wait_for_tasks(db_url, ids, deadline)
        assimilated, files_left = _query(
            db_url,
            "SELECT count(*) FILTER (WHERE assimilate_state = 2), count(*) FILTER (WHERE file_delete_state <> 2)"
            " FROM work_workunit",
        )[0]
        if time.monotonic() - last_log > 5:
            last_log = time.monotonic()
            states = dict(
                _query(db_url, "SELECT server_state, count(*) FROM work_result GROUP BY server_state")
            )
            log(
                f"{time.strftime('%H:%M:%S')} assimilated {assimilated}/{jobs}; results by server_state {states}"
            )
        if assimilated >= jobs and not files_left:
            break
        time.sleep(0.2)
    return int(assimilated)


def _first_dispatch(db_url: str, deadline: float) -> float:
    """The time at which the clients' first RPC had been given a job."""
    while time.monotonic() < deadline:
        if _query(db_url, "SELECT EXISTS (SELECT 1 FROM work_result WHERE server_state <> 2)")[0][0]:
            return time.monotonic()
        time.sleep(0.02)
    raise RuntimeError("no job was dispatched before the timeout: the clients could not fetch work")


def _purge_all(broker: Any, queue: str, db_url: str, deadline: float) -> None:
    """db_purge as it runs once the purge age has passed, until every workunit is archived."""
    _query(db_url, "UPDATE projects_project SET purge_min_age_days = 0 RETURNING id")
    while time.monotonic() < deadline:
        if not _query(db_url, "SELECT count(*) FROM work_workunit")[0][0]:
            return
        _wait_for_tasks(db_url, [broker.send_task("work.purge", queue=queue).id], deadline)


def _wait_for_tasks(db_url: str, ids: list[str], deadline: float) -> None:
    """Until the tasks' outcomes are in django-celery-results (the workers' result backend)."""
    while time.monotonic() < deadline:
        done = _query(
            db_url,
            "SELECT count(*) FROM django_celery_results_taskresult "
            f"WHERE status IN ('SUCCESS', 'FAILURE') AND task_id IN ({','.join(repr(i) for i in ids)})",
        )[0][0]
        if done >= len(ids):
            return
        time.sleep(0.05)


def _collect(
    db_url: str, work: Path, jobs: int, seconds: float, assimilated: int, schema: str
) -> DistributedOutcome:
    log_file = work / "data" / SLUG / "results" / "assimilated.log"
    names = log_file.read_text().split() if log_file.exists() else []
    not_over = _query(db_url, "SELECT count(*) FROM work_result WHERE server_state <> 5")[0][0]
    not_valid = _query(
        db_url, "SELECT count(*) FROM work_result WHERE outcome = 1 AND validate_state NOT IN (1, 4)"
    )[0][0]
    credited = _query(db_url, "SELECT count(*) FROM volunteers_account WHERE total_credit > 0")[0][0]
    with_valid = _query(
        db_url,
        "SELECT count(DISTINCT account_id) FROM work_result WHERE validate_state = 1 AND granted_credit > 0",
    )[0][0]
    runs = dict(_query(db_url, "SELECT daemon, count(*) FROM projects_daemonrun GROUP BY daemon"))
    upload = "upload handler" if _has_upload_handler(SLUG) else "written into the upload area"
    return DistributedOutcome(
        jobs=jobs,
        seconds=seconds,
        assimilated=assimilated,
        assimilation_log=names,
        results_not_over=int(not_over),
        results_not_valid=int(not_valid),
        accounts_with_credit=int(credited),
        accounts_with_valid_results=int(with_valid),
        daemon_runs={str(k): int(v) for k, v in runs.items()},
        schema=schema,
        upload=upload,
    )


def run_embedded(*, jobs: int, hosts: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="cobblestone-bench-"))
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "COBBLESTONE_DATA_DIR": str(work / "data"),
        "COBBLESTONE_VAR_DIR": str(work / "var"),
        "LOG_LEVEL": "WARNING",
        # Production settings: DEBUG would log every statement and slow every stage.
        "DEBUG": "false",
        "SECRET_KEY": "bench-only-secret-key-not-for-production-use",
    }
    try:
        schema = last_json(_manage(["--role", "schema"], env))["schema"]
        outcome = last_json(
            run_manage(
                "bench_pipeline",
                ["--role", "embedded", "--jobs", str(jobs), "--hosts", str(hosts)],
                env,
                timeout=6 * 3600,
                echo_stderr=True,
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {**outcome, "schema": schema}


# The table's rows: the scheduler RPC's reports and dispatch are metered inside it, and its
# own row keeps the rest (authentication, the host, parsing and writing the XML).
STAGE_ROWS = (
    ("scheduler RPC: reports", "report"),
    ("scheduler RPC: dispatch", "dispatch"),
    ("scheduler RPC: the rest", "scheduler_rpc"),
    ("upload handler", "upload"),
    ("transitioner", "transitioner"),
    ("validator", "validator"),
    ("assimilator", "assimilator"),
    ("file deleter", "file_deleter"),
    ("db_purge", "db_purge"),
    ("feeder", "feeder"),
    ("sequence_deadlines", "sequence_deadlines"),
)


def stage_costs(stages: dict[str, Any], jobs: int) -> list[tuple[str, float, float]]:
    """(stage, CPU milliseconds per workunit, statements per workunit), in pipeline order."""
    totals = {name: [float(v) for v in values] for name, values in stages.items()}
    rpc = totals.get("scheduler_rpc")
    if rpc is not None:
        for part in ("report", "dispatch"):
            if part in totals:
                rpc[0] -= totals[part][0]
                rpc[1] -= totals[part][1]
    rows = []
    for label, name in STAGE_ROWS:
        cpu, statements = totals.get(name, [0.0, 0.0])[:2]
        rows.append((label, 1000 * cpu / jobs, statements / jobs))
    rows.append(("all stages", sum(r[1] for r in rows), sum(r[2] for r in rows)))
    return rows


class Command(BaseCommand):
    help = (
        "Measure workunits per second through the whole pipeline (embedded SQLite; distributed PostgreSQL)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--jobs", default="1000", help="Workunits per run (quorum 2); several sizes as 1000,10000,100000"
        )
        parser.add_argument("--hosts", type=int, default=8, help="Simulated hosts")
        parser.add_argument("--mode", choices=["all", "embedded", "distributed"], default="all")
        parser.add_argument("--role", choices=["schema", "setup", "embedded", "clients"], help="(internal)")
        parser.add_argument("--urls", default="", help="(internal) web process base URLs")
        parser.add_argument("--authenticators", default="", help="(internal)")
        parser.add_argument("--stop-file", default="", help="(internal)")

    def handle(self, *args: Any, **opts: Any) -> None:
        role = opts["role"]
        if role == "schema":
            self.stdout.write(json.dumps({"schema": schema_create()}))
        elif role == "setup":
            self.stdout.write(json.dumps(pipeline_setup(jobs=int(opts["jobs"]), hosts=opts["hosts"])))
        elif role == "embedded":
            self.stdout.write(json.dumps(run_embedded_role(int(opts["jobs"]), opts["hosts"])))
        elif role == "clients":
            run_clients_role(
                opts["urls"].split(","), opts["authenticators"].split(","), Path(opts["stop_file"])
            )
        else:
            self._bench(opts)

    def _bench(self, opts: dict[str, Any]) -> None:
        try:
            sizes = [int(n) for n in str(opts["jobs"]).split(",")]
        except ValueError as exc:
            raise CommandError(f"--jobs takes numbers separated by commas: {exc}") from exc
        pg = os.environ.get("COBBLESTONE_TEST_DATABASE_URL") or os.environ.get("DATABASE_URL", "")
        redis = os.environ.get("COBBLESTONE_TEST_REDIS_URL") or os.environ.get("CELERY_BROKER_URL", "")
        distributed = opts["mode"] in ("all", "distributed")
        if distributed and (not pg.startswith("postgres") or not redis.startswith("redis")):
            if opts["mode"] == "distributed":
                raise CommandError("distributed needs a PostgreSQL and a Redis URL (see the help)")
            self.stderr.write("distributed: skipped (no PostgreSQL/Redis URL in the environment)")
            distributed = False
        runs: list[BenchRun] = []
        for jobs in sizes:
            if opts["mode"] in ("all", "embedded"):
                self.stderr.write(f"embedded, {jobs} workunits ...")
                e = run_embedded(jobs=jobs, hosts=opts["hosts"])
                runs.append(
                    BenchRun(
                        "embedded", "SQLite, daemons inline", jobs, e["seconds"], e["schema"], e["stages"],
                        {"this process (load generator included)": e["cpu"]},
                    )
                )  # fmt: skip
                self._print_run(runs[-1])
            if distributed:
                self.stderr.write(f"distributed, {jobs} workunits ...")
                d = run_distributed(
                    pg_url=pg, redis_url=redis, jobs=jobs, hosts=opts["hosts"], log=self.stderr.write,
                    timeout=max(150.0, jobs / 2),
                )  # fmt: skip
                if d.assimilated < d.jobs:
                    raise CommandError(
                        f"distributed run did not finish: {d.assimilated}/{d.jobs} assimilated"
                    )
                runs.append(
                    BenchRun(
                        "distributed",
                        "PostgreSQL, 2 web + 2 workers",
                        jobs,
                        d.seconds,
                        d.schema,
                        d.stages,
                        d.cpu,
                    )
                )
                self._print_run(runs[-1])
        self.stdout.write("")
        self.stdout.write(f"{'setup':<12}{'what':<32}{'WUs':>8}{'seconds':>10}{'WU/s':>8}  schema")
        for run in runs:
            self.stdout.write(
                f"{run.setup:<12}{run.what:<32}{run.jobs:>8}{run.seconds:>10.1f}{run.rate:>8.1f}  {run.schema}"
            )
        self.stdout.write(f"machine: {machine_description()}")

    def _print_run(self, run: BenchRun) -> None:
        """The run's cost per workunit, stage by stage, then by process."""
        self.stdout.write("")
        self.stdout.write(f"{run.setup}, {run.jobs} workunits: {run.rate:.1f} WU/s ({run.seconds:.1f} s)")
        self.stdout.write(f"  {'stage':<28}{'CPU ms/WU':>10}{'statements/WU':>15}")
        for label, ms, statements in stage_costs(run.stages, run.jobs):
            self.stdout.write(f"  {label:<28}{ms:>10.2f}{statements:>15.1f}")
        for label, seconds in run.cpu.items():
            self.stdout.write(f"  {'CPU of ' + label:<43}{1000 * seconds / run.jobs:>10.2f} ms/WU")


@dataclass(frozen=True, slots=True)
class BenchRun:
    setup: str
    what: str
    jobs: int
    seconds: float
    schema: str
    stages: dict[str, Any]
    cpu: dict[str, float]

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds if self.seconds else 0.0
