"""Fault injection: the production stack keeps its data right and catches up after faults.

Lean emulated hosts (apps.emulator.live) stream scheduler RPCs and output uploads through
nginx over HTTPS to a project whose app needs two agreeing replicas per workunit. Under that
load the test kills a gunicorn worker, restarts PostgreSQL, restarts Redis, kills a process
of the Celery worker's pool, then kills the worker's main process and starts it again as
systemd would. It then stops the load, lets every host upload and report what it holds,
and waits for the daemons that beat schedules on the Celery worker to validate and
assimilate everything. Read with SQL from the stack's database (and the data area), the
invariants must hold: no result sent to two hosts, none both reported and unsent or in
progress, no acknowledged report lost, credit granted once per valid result, every valid
result's outputs on disk as recorded, no workunit stuck. A workunit whose claim died with
the pass that held it waits at most for the claim's lease (90 s, for a killed process; a
pass that lost its connection releases its claims at its next pass), so the catch-up waits
for those too, and none may be left held. Nothing else may be left, and neither the worker's main process nor PostgreSQL may have
logged a failure (a result it could not record, a deadlock). ``pytest -s`` prints the figures.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from apps.benchmarks.lean import LeanHost
from apps.benchmarks.stack import Stack
from apps.benchmarks.stream import LeanStream
from apps.emulator.live import HostHardware, HttpSession, UploadGate, account_key
from apps.work.domain.states import AssimilateState, FileDeleteState, Outcome, ServerState, ValidateState
from apps.work.services import assimilator, transitioner, validator
from tests.production.conftest import project_install, sql

pytestmark = [pytest.mark.slow, pytest.mark.redis]

SLUG = "faults"
HOSTS = 32
ACCOUNTS = 8  # four hosts per volunteer
WORKUNITS = 1200
THINK = (1.0, 3.0)  # wall seconds between two RPCs of a host: about 16 RPCs/s offered
LOAD_BETWEEN = 6.0  # wall seconds of load before each fault
BUSY_WAIT = 2.0  # wall seconds a host backs off after an RPC that handled nothing
RECOVERY_BOUND = 90.0  # seconds a part may take to be back after a fault
DRAIN_BOUND = 90.0  # seconds the hosts get to upload and report what they hold
CATCH_UP_BOUND = 120.0  # seconds the daemons get to validate and assimilate everything
STUCK_SECONDS = 60  # a transition time further in the past than this is a stuck workunit
# A daemon pass claims a workunit for this long: one whose process was killed holding a claim
# leaves the workunit until the lease runs out.
LEASE = max(m.CLAIM_LEASE for m in (validator, transitioner, assimilator)) + timedelta(seconds=5)
# Two hours of work at 4 GFLOPS: each RPC (half an hour apart in simulated time) reports
# about a quarter of a job per CPU.
WU_TEMPLATE = """<input_template>
  <workunit>
    <rsc_fpops_est>2.88e13</rsc_fpops_est>
    <rsc_fpops_bound>2.88e15</rsc_fpops_bound>
  </workunit>
</input_template>
"""
# Kinds of client-visible error a fault explains: the connection or the proxy failed, or
# the server said the project is down or asked for the upload again later.
EXPECTED_KINDS = ("connection failed", "HTTP 502", "HTTP 503", "HTTP 504", "project is down", "try later")
# What the Celery worker's main process logs when a failure escapes it (a result it could not
# record, a lost connection it could not replace); the last one stops the worker for good.
WORKER_FAILURES = ("Pool callback raised exception", "Unrecoverable error")
# PostgreSQL's log line for two transactions that waited for each other (one was rolled back,
# and its client told the project is down).
DEADLOCK = "deadlock detected"


@dataclass
class Fault:
    """One injected fault: when (seconds into the load), the RPCs the hosts sent in the
    seconds of load before it, how long until the stack was healthy again, and the RPCs sent
    meanwhile."""

    name: str
    at: float = 0.0
    rpcs_before: int = 0
    recovered: float = 0.0
    rpcs_during: int = 0


@dataclass
class Figures:
    """What the run measured and found, printed as a table."""

    setup_seconds: float = 0.0
    faults: list[Fault] = field(default_factory=list)
    drain_seconds: float = 0.0
    held_after_drain: int = 0
    catch_up_seconds: float = 0.0
    caught_up: bool = False
    leased_before: int = 0  # reported workunits a pass's claim held when the catch-up began
    leased: int = 0  # and when it ended (a dead pass's claim holds one until its lease ends)
    backlog_before: dict[str, int] = field(default_factory=dict)  # when the catch-up began
    worker_failures: list[str] = field(default_factory=list)  # lines of the worker's log
    deadlocks: list[str] = field(default_factory=list)  # lines of PostgreSQL's log
    violations: dict[str, list[object]] = field(default_factory=dict)


def project_install_with_work(stack: Stack, work: Path, slug: str = SLUG, workunits: int = WORKUNITS) -> str:
    """The project as an operator sets it up, with an app whose results need a quorum of
    two, and its workunits; its master URL."""
    master_url = project_install(
        stack, slug, work, "twin",
        "--min_quorum", "2", "--target_nresults", "2", "--max_error_results", "3",
        "--max_total_results", "6", "--max_success_results", "4", wu_template=WU_TEMPLATE,
    )  # fmt: skip
    stack.manage(
        "create_work", "--project", slug, "--appname", "twin", "--stdin",
        "--wu_template", str(work / "wu.xml"), "--result_template", str(work / "result.xml"),
        input="".join(f"--wu_name twin_{i:05d}\n" for i in range(workunits)),
    )  # fmt: skip
    return master_url


def hosts_make(
    stack: Stack, master_url: str, *, count: int = HOSTS, accounts: int = ACCOUNTS, ncpus: int = 0
) -> list[LeanHost]:
    """Volunteers sign up with create_account.php; each attaches its share of the computers
    (small ones, or of ``ncpus`` CPUs)."""

    def session() -> HttpSession:
        return HttpSession(timeout=30, context=stack.ssl_context)

    signup = session()
    keys = [
        account_key(
            signup, master_url, email=f"v{i}@faults.example.org", password="pw-faults", user_name=f"V{i}"
        )
        for i in range(accounts)
    ]
    signup.close()
    rng = random.Random(22)
    gate = UploadGate()
    hosts = []
    for i in range(count):
        hardware = HostHardware(ncpus=ncpus or rng.choice((2, 2, 4)), cpu_flops=rng.uniform(3e9, 5e9))
        host = LeanHost(
            index=i,
            hardware=hardware,
            master_url=master_url,
            authenticator=keys[i % accounts],
            session=session(),
            gate=gate,
            seed=22,
        )
        host.busy_wait = BUSY_WAIT
        hosts.append(host)
    return hosts


def healthy(stack: Stack) -> bool:
    """/health/ through nginx: database, broker, a Celery worker, disk, migrations all OK."""
    try:
        status, _, body = stack.get("/health/", {"Accept": "application/json"})
    except OSError:
        return False
    return status == 200 and set(json.loads(body).values()) == {"OK"}


def until(predicate: Callable[[], bool], *, timeout: float, what: str) -> float:
    """Seconds until ``predicate`` holds; fails the test after ``timeout``."""
    started = time.monotonic()
    while not predicate():
        assert time.monotonic() - started < timeout, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.25)
    return time.monotonic() - started


def inject(stack: Stack, stream: LeanStream, figures: Figures, name: str, act: Callable[[], object]) -> None:
    """After ``LOAD_BETWEEN`` seconds of load, run one fault; wait until the stack is whole
    and healthy again."""
    sent = stream.rpcs_sent()
    time.sleep(LOAD_BETWEEN)
    fault = Fault(name, at=stream.elapsed, rpcs_before=stream.rpcs_sent() - sent)
    sent = stream.rpcs_sent()
    started = time.monotonic()
    act()
    until(lambda: healthy(stack), timeout=RECOVERY_BOUND, what=f"health after: {name}")
    fault.recovered = time.monotonic() - started
    fault.rpcs_during = stream.rpcs_sent() - sent
    figures.faults.append(fault)


def kill_web_worker(stack: Stack) -> None:
    web = stack.part("web")
    killed = stack.kill("web", child=True)
    until(lambda: len(web.children()) == 2 and killed not in web.children(), timeout=RECOVERY_BOUND,
          what="gunicorn to replace its worker")  # fmt: skip


def kill_pool_process(stack: Stack) -> None:
    worker = stack.part("worker")
    killed = stack.kill("worker", child=True)
    until(lambda: len(worker.children()) == 2 and killed not in worker.children(), timeout=RECOVERY_BOUND,
          what="Celery to replace its pool process")  # fmt: skip


def kill_worker_and_restart(stack: Stack) -> None:
    """SIGKILL to the worker's main process; systemd (Restart=always, RestartSec=5) then
    kills what is left of the unit and starts it again."""
    stack.kill("worker", sig=signal.SIGKILL)
    time.sleep(5)
    stack.start_part("worker")


def project_id(stack: Stack, slug: str = SLUG) -> int:
    return int(sql(stack, "SELECT id FROM projects_project WHERE slug = %s", slug)[0][0])


def backlog(stack: Stack, pid: int) -> dict[str, int]:
    """What the daemons can do now; all zero once they have caught up."""
    row = sql(
        stack,
        "SELECT count(*) FILTER (WHERE need_validate), count(*) FILTER (WHERE assimilate_state = %s"
        " AND (assimilate_retry_time IS NULL OR assimilate_retry_time <= now())),"
        " count(*) FILTER (WHERE transition_time <= now()) FROM work_workunit WHERE project_id = %s",
        int(AssimilateState.READY),
        pid,
    )[0]
    return {
        "to validate": row[0],
        "to assimilate": row[1],
        "transition due": row[2],
        "reported, unfinished": len(unfinished_workunits(stack, pid)),
    }


def unfinished_workunits(stack: Stack, pid: int) -> list[tuple[object, ...]]:
    """Workunits whose results are all over (reported, or ended) yet neither assimilated nor
    errored: nothing but the daemons stands between them and their end. The last column says
    whether a pass's claim holds one back (its transition or assimilation time lies within a
    lease from now): the transitioner or the assimilator takes it again when the lease ends."""
    return sql(
        stack,
        "SELECT w.name, w.need_validate, w.assimilate_state, w.transition_time,"
        " (NOT w.need_validate AND w.transition_time > now() AND w.transition_time <= now() + %s)"
        " OR (w.assimilate_state = %s AND w.assimilate_retry_time > now()"
        "     AND w.assimilate_retry_time <= now() + %s) FROM work_workunit w"
        " WHERE w.project_id = %s AND w.assimilate_state <> %s AND w.error_mask = 0"
        " AND NOT EXISTS (SELECT 1 FROM work_result r WHERE r.workunit_id = w.id AND r.server_state <> %s)",
        LEASE, int(AssimilateState.READY), LEASE, pid, int(AssimilateState.DONE), int(ServerState.OVER),
    )  # fmt: skip


def invariants(stack: Stack, pid: int, hosts: list[LeanHost]) -> dict[str, list[object]]:
    """Every invariant by name, with the rows that break it (none, when the server is right)."""
    over, valid = int(ServerState.OVER), int(ValidateState.VALID)
    found: dict[str, list[object]] = {}
    holder: dict[str, int] = {}
    twice = []
    for host in hosts:
        for name in set(host.stats.received):
            if holder.setdefault(name, host.index) != host.index:
                twice.append((name, holder[name], host.index))
    found["result sent to two hosts (as the hosts saw it)"] = twice
    stored = dict(sql(stack, "SELECT name, host_id FROM work_result WHERE project_id = %s", pid))
    found["result held by a host the database does not name"] = [
        (name, host.hostid, stored.get(name))
        for host in hosts
        for name in set(host.stats.received)
        if stored.get(name) != host.hostid
    ]
    found["two results of a workunit on one host"] = sql(
        stack,
        "SELECT workunit_id, host_id FROM work_result WHERE project_id = %s AND host_id IS NOT NULL"
        " GROUP BY workunit_id, host_id HAVING count(*) > 1",
        pid,
    )
    found["result reported yet unsent or in progress"] = sql(
        stack,
        "SELECT name, server_state, outcome FROM work_result WHERE project_id = %s AND"
        " ((server_state = %s AND (received_time IS NOT NULL OR outcome <> %s OR host_id IS NOT NULL))"
        " OR (server_state = %s AND received_time IS NOT NULL))",
        pid, int(ServerState.UNSENT), int(Outcome.INIT), int(ServerState.IN_PROGRESS),
    )  # fmt: skip
    reported = dict(sql(stack, "SELECT name, received_time IS NOT NULL FROM work_result WHERE project_id = %s"
                        " AND server_state = %s", pid, over))  # fmt: skip
    found["acknowledged report not recorded"] = [
        name for host in hosts for name in host.stats.acked if not reported.get(name)
    ]
    found["credit on a result that is not valid"] = sql(
        stack,
        "SELECT name, validate_state, granted_credit FROM work_result"
        " WHERE project_id = %s AND granted_credit <> 0 AND validate_state <> %s",
        pid,
        valid,
    )
    for table, column in (("volunteers_account", "account_id"), ("hosts_host", "host_id")):
        found[f"{table}.total_credit is not the sum of its valid results' credit"] = sql(
            stack,
            f"SELECT o.id, o.total_credit, s.granted FROM {table} o LEFT JOIN LATERAL"
            f" (SELECT coalesce(sum(r.granted_credit), 0) AS granted FROM work_result r"
            f"  WHERE r.{column} = o.id AND r.validate_state = %s) s ON true"
            " WHERE o.project_id = %s AND abs(o.total_credit - s.granted) > 1e-6 * greatest(1, o.total_credit)",
            valid,
            pid,
        )
    found["valid result's output missing or not as recorded"] = outputs_missing(stack, pid)
    found["workunit reported, not finished, not claimed"] = [
        row for row in unfinished_workunits(stack, pid) if not row[-1]
    ]
    found["workunit with a transition time long past"] = sql(
        stack,
        "SELECT name, transition_time FROM work_workunit WHERE project_id = %s"
        " AND transition_time < now() - make_interval(secs => %s)",
        pid,
        STUCK_SECONDS,
    )
    return found


def outputs_missing(stack: Stack, pid: int) -> list[object]:
    """Valid results' outputs whose files the file deleter has not been let at, in the upload
    area; and every assimilated workunit's canonical outputs, in the results area."""
    data = Path(stack.env["COBBLESTONE_DATA_DIR"]) / SLUG
    rows = sql(
        stack,
        "SELECT f.name, f.uploaded, f.nbytes, f.md5_cksum, NULL FROM work_outputfile f"
        " JOIN work_result r ON r.id = f.result_id WHERE r.project_id = %s AND f.upload"
        " AND r.validate_state = %s AND r.file_delete_state = %s"
        " UNION ALL SELECT f.name, f.uploaded, f.nbytes, f.md5_cksum, w.name FROM work_workunit w"
        " JOIN work_outputfile f ON f.result_id = w.canonical_result_id"
        " WHERE w.project_id = %s AND w.assimilate_state = %s AND f.upload",
        pid, int(ValidateState.VALID), int(FileDeleteState.INIT), pid, int(AssimilateState.DONE),
    )  # fmt: skip
    missing = []
    for name, uploaded, nbytes, md5, wu_name in rows:
        path = data / "upload" / name if wu_name is None else data / "results" / wu_name / name
        content = path.read_bytes() if path.is_file() else None
        if (
            not uploaded
            or content is None
            or len(content) != nbytes
            or hashlib.md5(content).hexdigest() != md5
        ):
            missing.append((str(path), uploaded, nbytes, None if content is None else len(content)))
    return missing


def figures_table(figures: Figures, stream: LeanStream, backlog_left: dict[str, int]) -> str:
    summary = stream.summary()
    errors = sum(count for _, count in summary.error_kinds)
    rows = [
        ("project set-up seconds", f"{figures.setup_seconds:.1f}"),
        ("hosts (volunteers)", f"{len(stream.hosts)} ({ACCOUNTS})"),
        ("load: wall seconds", f"{summary.wall_seconds:.1f}"),
        ("scheduler RPCs sent", f"{summary.rpcs_sent} ({summary.rpcs_sent / summary.wall_seconds:.1f}/s)"),
        ("  answered 'server busy'", f"{summary.busy}"),
        ("jobs dispatched", f"{summary.jobs_received}"),
        ("results reported, acknowledged", f"{summary.results_reported}, {summary.results_acked}"),
        ("outputs uploaded", f"{summary.uploads}"),
        ("client-visible errors", f"{errors}"),
        *((f"  {kind}", f"{count}") for kind, count in summary.error_kinds),
        *(
            (
                f"fault at {f.at:5.1f} s: {f.name}",
                f"{f.rpcs_before} RPCs in the {LOAD_BETWEEN:.0f} s before; healthy after"
                f" {f.recovered:.1f} s, {f.rpcs_during} RPCs meanwhile",
            )
            for f in figures.faults
        ),
        ("drain: seconds, jobs still held", f"{figures.drain_seconds:.1f}, {figures.held_after_drain}"),
        ("backlog when the catch-up began", ", ".join(f"{k} {v}" for k, v in figures.backlog_before.items())),
        ("catch-up seconds (bound)", f"{figures.catch_up_seconds:.1f} ({CATCH_UP_BOUND:.0f})"),
        (
            "reported workunits a claim holds: catch-up start, end",
            f"{figures.leased_before}, {figures.leased} (a dead pass's until its lease, {LEASE})",
        ),
        ("backlog left", ", ".join(f"{k} {v}" for k, v in backlog_left.items())),
        ("failures in the worker's main process", f"{len(figures.worker_failures)}"),
        ("deadlocks in PostgreSQL", f"{len(figures.deadlocks)}"),
        ("invariant violations", f"{sum(len(v) for v in figures.violations.values())}"),
        *((f"  {name}", f"{len(rows)}") for name, rows in figures.violations.items()),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(["", "Fault-injection suite", *(f"  {k.ljust(width)}  {v}" for k, v in rows)])


def postgres_log(stack: Stack) -> Path:
    assert stack.postgres is not None  # the stack's own server, which the test restarts
    return stack.postgres.directory / "postgres.log"


def log_lines(path: Path, start: int, *needles: str) -> list[str]:
    """Lines written to the log at ``path`` since it was ``start`` bytes long that hold a needle."""
    with path.open("rb") as log:
        log.seek(start)
        text = log.read().decode(errors="replace")
    return [line for line in text.splitlines() if any(needle in line for needle in needles)]


def stack_heal(stack: Stack) -> None:
    """Whatever a failed run left down is started again: later tests share the stack."""
    if stack.postgres is not None and not stack.postgres.running():
        stack.start_part("postgres")
    for name in ("redis", "web", "worker", "beat", "nginx"):
        if not stack.part(name).running():
            stack.start_part(name)


def test_under_load_restarts_and_kills_lose_nothing_and_the_daemons_catch_up(production_stack, tmp_path):
    stack = production_stack
    figures = Figures()
    started = time.monotonic()
    master_url = project_install_with_work(stack, tmp_path)
    pid = project_id(stack)
    stream = LeanStream(hosts_make(stack, master_url), think=THINK, seed=22)
    figures.setup_seconds = time.monotonic() - started
    logs = {"worker": stack.part("worker").log_path, "postgres": postgres_log(stack)}
    log_start = {name: path.stat().st_size for name, path in logs.items()}
    try:
        stream.start()
        until(
            lambda: sum(h.stats.results_acked for h in stream.hosts) > 0, timeout=60, what="the first reports"
        )
        for name, act in (
            ("SIGKILL a gunicorn worker", lambda: kill_web_worker(stack)),
            ("restart PostgreSQL", lambda: stack.restart("postgres")),
            ("restart Redis", lambda: stack.restart("redis")),
            ("SIGKILL a Celery pool process", lambda: kill_pool_process(stack)),
            ("SIGKILL the Celery worker, start it", lambda: kill_worker_and_restart(stack)),
        ):
            inject(stack, stream, figures, name, act)
        time.sleep(LOAD_BETWEEN)  # load after the last fault
    finally:
        stream.stop()
        stack_heal(stack)
    started = time.monotonic()
    figures.held_after_drain = stream.drain(timeout=DRAIN_BOUND)
    figures.drain_seconds = time.monotonic() - started
    stream.close()

    started = time.monotonic()
    left = figures.backlog_before = backlog(stack, pid)
    figures.leased_before = sum(1 for *_, leased in unfinished_workunits(stack, pid) if leased)
    while any(left.values()) and time.monotonic() - started < CATCH_UP_BOUND:
        time.sleep(1)
        left = backlog(stack, pid)
    figures.caught_up = not any(left.values())
    figures.catch_up_seconds = time.monotonic() - started
    figures.leased = sum(1 for *_, leased in unfinished_workunits(stack, pid) if leased)
    figures.violations = invariants(stack, pid, stream.hosts)
    figures.worker_failures = log_lines(logs["worker"], log_start["worker"], *WORKER_FAILURES)
    figures.deadlocks = log_lines(logs["postgres"], log_start["postgres"], DEADLOCK)
    print(figures_table(figures, stream, left))  # noqa: T201 - the suite's figures, shown by pytest -s

    summary = stream.summary()
    assert all(f.rpcs_before > 0 for f in figures.faults), "a fault happened with no load"
    assert figures.held_after_drain == 0
    assert figures.caught_up, left
    assert figures.leased == 0
    unexplained = {k: n for k, n in summary.error_kinds if not any(e in k for e in EXPECTED_KINDS)}
    assert unexplained == {}, summary.errors[:20]
    assert {name: rows[:5] for name, rows in figures.violations.items() if rows} == {}
    assert figures.worker_failures == []
    assert figures.deadlocks == []
    assimilated = sql(
        stack, "SELECT count(*) FROM work_workunit WHERE project_id = %s AND assimilate_state = %s",
        pid, int(AssimilateState.DONE),
    )[0][0]  # fmt: skip
    assert assimilated > 100  # the pipeline ran: validated pairs, credit, assimilation


CATCH_UP_SLUG = "catchup"
CATCH_UP_HOSTS = 4
CATCH_UP_RESULTS = 1200  # reported by the four hosts, then PostgreSQL restarts
CATCH_UP_SHARE = 0.99  # of them validated within CATCH_UP_BOUND of the restart


def validated_share(stack: Stack, pid: int) -> tuple[int, int]:
    """(results checked by the validator, results reported a success)."""
    row = sql(
        stack,
        "SELECT count(*) FILTER (WHERE validate_state <> %s), count(*) FROM work_result"
        " WHERE project_id = %s AND server_state = %s AND outcome = %s",
        int(ValidateState.INIT), pid, int(ServerState.OVER), int(Outcome.SUCCESS),
    )[0]  # fmt: skip
    return int(row[0]), int(row[1])


def batch_begun(stack: Stack, timeout: float) -> bool:
    """Wait until a daemon's batch is in its transaction, past its claim (a statement on the
    results or the host_app_versions in a transaction); whether one was seen."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(stack.env["DATABASE_URL"], autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
                " AND (query LIKE '%work_result%' OR query LIKE '%hostappversion%')"
            ).fetchone()
            if row and row[0]:
                return True
            time.sleep(0.01)
    return False


def test_a_database_restart_while_the_worker_catches_up_holds_no_batch_for_the_lease(
    production_stack, tmp_path
):
    """Four hosts report 1,200 results; PostgreSQL restarts while the worker validates them.
    The batches the restart cut must not wait for their claims' lease."""
    stack = production_stack
    master_url = project_install_with_work(stack, tmp_path, CATCH_UP_SLUG, CATCH_UP_RESULTS // 2)
    pid = project_id(stack, CATCH_UP_SLUG)
    hosts = hosts_make(stack, master_url, count=CATCH_UP_HOSTS, accounts=CATCH_UP_HOSTS, ncpus=32)
    stream = LeanStream(hosts, think=(0.5, 1.0), seed=31)
    try:
        stream.start()
        until(
            lambda: sum(len(set(h.stats.received)) for h in hosts) >= CATCH_UP_RESULTS,
            timeout=300,
            what="every result sent",
        )
    finally:
        stream.stop()
        stack_heal(stack)
    held = stream.drain(timeout=DRAIN_BOUND)
    stream.close()
    # The restart cuts a daemon's batch: one is in its transaction, past its claim.
    cut = batch_begun(stack, timeout=60)
    checked, reported = validated_share(stack, pid)
    stack.restart("postgres")
    restarted = time.monotonic()
    progress = []
    while time.monotonic() - restarted < CATCH_UP_BOUND:
        time.sleep(1)
        with contextlib.suppress(psycopg.OperationalError):
            progress.append((time.monotonic() - restarted, *validated_share(stack, pid)))
        if progress and progress[-1][1] == progress[-1][2]:
            break
    print(  # noqa: T201 - the figures, shown by pytest -s
        f"\ncatch-up after a PostgreSQL restart (a batch cut: {cut}): {reported} results reported, {checked}"
        " validated at the restart; then " + ", ".join(f"{t:.0f} s: {v}" for t, v, _ in progress)
    )

    assert held == 0
    assert reported >= CATCH_UP_RESULTS
    assert progress[-1][1] >= CATCH_UP_SHARE * progress[-1][2], progress
