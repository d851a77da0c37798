"""The locality job source (docs/locality.md) and its wait for on-demand work after the commit.

In a project with locality scheduling, locality workunits (``FILENAME__*``) are sent only
by this source; it runs before the general source, in the order of BOINC's
sched_locality.cpp:

1. record the large files the host reports (its sticky file_infos) as HostFile rows;
2. for each of them, in random or increasing-name order, send unsent results of that
   file, for each user/file pair in increasing result id order; a file that yields
   nothing is kept, marked "no work", signalled "need work" (then waited for, see
   below), or deleted from the host (``decide_file_without_results``);
3. while the host still needs work: a file picked uniformly from the least-held files of
   the working set, or, when that file is excluded for this user or every file of the set
   already has M hosts, the deterministic choice among files with work; not before the
   wait when step 2 signalled need work;
4. record the files that went out with the jobs as HostFile(sent_by_scheduler=True).

The wait. BOINC's design sleeps N seconds inside the request and queries once more. The RPC
here is one database transaction, and sleeping in it would hold the host's row locks
(and, on SQLite, the write lock that every other RPC needs). So the source only notes
"wait for X" for this request; ``locality_retry_after_commit`` runs after the RPC's
transaction has committed, polls for up to N seconds with no transaction open, then
runs a second short transaction, with the RPC's locks, that tries those files once
more (a file still without work is then handled as one with no results: marked, and
deleted from the host), then step 3 if the host still needs work, and adds the jobs it
finds to the reply. Step 3 waits for the retry so that a host holding X is not sent a
second large file just before X's on-demand work appears.
"""

from __future__ import annotations

import logging
import random
import time
from contextvars import ContextVar
from dataclasses import dataclass, field

from django.db import connection, transaction

from apps.core.db import advisory_xact_lock
from apps.locality.domain.choice import (
    FALLBACK,
    LocalityCandidate,
    choose_balanced_file_for_new_host,
    decide_file_without_results,
    fallback_file_for_host,
    next_results_for_file,
    order_host_files,
)
from apps.locality.models import LocalityFile
from apps.locality.need_work import need_work_signal
from apps.locality.selectors import (
    any_file_has_unsent,
    any_file_no_work_available,
    file_has_results,
    file_holder_counts,
    file_no_work_available,
    project_target_nresults,
    result_unsent_for_file,
    unsent_counts,
    user_last_sent_ids,
    working_set_names,
)
from apps.locality.services import (
    host_file_delete_requested,
    host_files_record_reported,
    host_files_record_sent,
    locality_file_mark_no_work,
    locality_files_ensure,
)
from apps.locality.triggers import trigger_root
from apps.projects.models import Project
from apps.protocol import SchedulerReply
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.dispatch import Dispatcher, in_progress_limits, lock_unsent
from apps.scheduler.services.need import work_need
from apps.scheduler.services.reply import reply_build
from apps.scheduler.services.versions import host_app_versions_lock, host_versions
from apps.work.domain.states import ServerState

logger = logging.getLogger(__name__)

WINDOW = 64  # unsent results of one file read (and locked) at a time
MAX_WINDOWS = 8  # BOINC tries at most 100 results per file; this is 512
MAX_REPORTED_FILES = 1000  # sticky files of one request considered
MAX_NEW_FILES = 4  # files a host may be started on in one RPC
MAX_WAIT_SECONDS = 60.0  # hard cap on locality_scheduling_wait_period (a web worker waits)
POLL_INTERVAL = 0.5

# The clock of the wait; tests replace these two.
sleep = time.sleep
monotonic = time.monotonic


@dataclass(slots=True)
class _PendingWaits:
    """Files of one RPC whose generator was asked for work, to retry after the commit
    (with the search for new files, which waits for them)."""

    ctx: RpcContext
    files: list[str]
    held: set[str]
    tried: set[str]


# Per request (a context variable is per thread / per asyncio task); the hook checks the
# RpcContext identity, so a request that failed before its hook ran leaves nothing usable.
_pending: ContextVar[_PendingWaits | None] = ContextVar("locality_pending_waits", default=None)


@dataclass(slots=True)
class _FileSearch:
    """State of the search for files a host does not hold, within one pass."""

    use_fallback: bool = False
    working_set: set[str] | None = None
    unsent: dict[str, int] | None = None  # unsent results per file, for the fallback
    holders: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _LocalityPass:
    """One pass of the source over a request (the RPC's, or the retry after the wait)."""

    dispatcher: Dispatcher
    waited: set[str]  # files whose on-demand work was already waited for (the retry's)
    rng: random.Random
    files: dict[str, LocalityFile] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)  # locality files the host holds
    last_sent: dict[str, int] = field(default_factory=dict)  # the user's largest result id per file
    tried: set[str] = field(default_factory=set)
    waits: list[str] = field(default_factory=list)
    first_job: int = 0
    target_hosts: int = 1  # M: hosts each file should reach

    @property
    def ctx(self) -> RpcContext:
        return self.dispatcher.ctx

    def load_host_files(self, names: set[str], *, complete: bool) -> list[str]:
        ctx = self.ctx
        assert ctx.host is not None
        assert ctx.account is not None
        self.files = locality_files_ensure(project=ctx.project, names=names)
        host_files_record_reported(host=ctx.host, files=self.files.values(), now=ctx.now, complete=complete)
        self.held |= set(self.files)
        self.last_sent.update(
            user_last_sent_ids(project=ctx.project, account_id=ctx.account.id, file_names=self.files)
        )
        return list(self.files)

    # --- one file ---------------------------------------------------------------------------
    def scan(self, name: str) -> tuple[int, bool]:
        """Send results of ``name``: (number sent, whether every candidate was looked at)."""
        d, project = self.dispatcher, self.ctx.project
        floor = self.last_sent.get(name)
        cursor = floor
        sent = 0
        for _ in range(MAX_WINDOWS):
            if not d.need.work_needed():
                return sent, False
            qs = result_unsent_for_file(project=project, file_name=name, after_id=cursor)
            window = list(lock_unsent(qs)[:WINDOW])
            if not window:
                return sent, True
            cursor = window[-1].id
            d.load_exclusions({r.workunit_id for r in window})
            by_id = {r.id: r for r in window}
            order = next_results_for_file(
                [LocalityCandidate(r.id, r.workunit_id, name) for r in window],
                file_name=name,
                last_sent_result_id=floor,
                one_result_per_user_per_wu=project.one_result_per_user_per_wu,
                user_workunit_ids=d.wus_of_user,
                limit=len(window),
            )
            for result_id in order:
                if not d.need.work_needed():
                    return sent, False
                result = by_id[result_id]
                if d.option_for(result) is None or _non_cpu_intensive(d, result.app_id):
                    # The design: all results of a file have versions for the same platforms,
                    # so one this host cannot run ends the file (and it is not deleted). A
                    # non-CPU-intensive app's jobs are the NCI source's, one per host.
                    return sent, False
                if d.try_send(result):
                    sent += 1
                    floor = result_id  # the invariant: later sends to this user go above it
                    self.last_sent[name] = result_id
        return sent, False

    def file_on_host(self, name: str) -> None:
        self.tried.add(name)
        sent, exhausted = self.scan(name)
        if sent == 0 and exhausted:
            self.no_results(name, on_host=True)

    def no_results(self, name: str, *, on_host: bool) -> None:
        """The design's rule for a file with nothing sendable to this host (decide_file_without_results)."""
        ctx = self.ctx
        project = ctx.project
        if file_has_results(project=project, file_name=name, state=ServerState.UNSENT):
            return  # KEEP: there is work, just none for this host or user now
        file = self.files.get(name)
        action = decide_file_without_results(
            has_unsent_results=False,
            no_work_available=file_no_work_available(project=project, file=file, file_name=name),
            more_to_come=file_has_results(project=project, file_name=name, state=ServerState.IN_PROGRESS),
            wait_period=_effective_wait_period(project),
            already_waited=name in self.waited,
        )
        if file is not None and action.signals_need_work:
            need_work_signal(file=file, host=ctx.host, now=ctx.now)
        if on_host and action.retries_after_wait:
            self.waits.append(name)
        if file is not None and action.marks_no_work:
            locality_file_mark_no_work(file=file, now=ctx.now)
        if on_host and action.deletes_from_host:
            assert ctx.host is not None
            ctx.delete_file_infos.append(name)
            self.held.discard(name)
            if file is not None:
                host_file_delete_requested(host=ctx.host, file=file, now=ctx.now)

    # --- files the host does not have -------------------------------------------------------
    def new_files(self) -> None:
        """A host with no files: the working set first, then the deterministic
        choice outside it whenever a pick gives this user nothing (Einstein's steps 6-7)."""
        ctx, need = self.ctx, self.dispatcher.need
        assert ctx.account is not None
        self.target_hosts = project_target_nresults(project=ctx.project)
        search = _FileSearch()
        for _ in range(MAX_NEW_FILES):
            if not need.work_needed():
                return
            pick = self._pick_new_file(search)
            if pick is None:
                return
            self.tried.add(pick)
            self.files.update(locality_files_ensure(project=ctx.project, names={pick}))
            self.last_sent.update(
                user_last_sent_ids(project=ctx.project, account_id=ctx.account.id, file_names=[pick])
            )
            sent, exhausted = self.scan(pick)
            if sent == 0 and exhausted:
                if file_has_results(project=ctx.project, file_name=pick, state=ServerState.UNSENT):
                    search.use_fallback = True  # excluded for this user: the choice outside the set
                else:
                    self.no_results(pick, on_host=False)  # a stale working-set entry: pick again

    def _pick_new_file(self, search: _FileSearch) -> str | None:
        ctx = self.ctx
        assert ctx.host is not None
        if not search.use_fallback:
            if search.working_set is None:
                search.working_set = working_set_names(project=ctx.project)
            candidates = search.working_set - self.tried
            holders = file_holder_counts(project=ctx.project, now=ctx.now, file_names=candidates)
            chosen = choose_balanced_file_for_new_host(
                candidates, holders, self.rng, target_hosts=self.target_hosts
            )
            if chosen is not FALLBACK:
                return str(chosen)
            search.use_fallback = True
        if search.unsent is None:
            # The expensive search (BOINC's step 7), only when the working set gave nothing.
            search.unsent = unsent_counts(project=ctx.project)
            search.holders = file_holder_counts(project=ctx.project, now=ctx.now)
        return fallback_file_for_host(
            ctx.host.id, search.unsent, self.tried, holders=search.holders, target_hosts=self.target_hosts
        )

    def record_sent(self) -> None:
        ctx = self.ctx
        assert ctx.host is not None
        names = {job.result.workunit.locality_file_name for job in ctx.sent[self.first_job :]} - {""}
        if not names:
            return
        self.files.update(locality_files_ensure(project=ctx.project, names=names - set(self.files)))
        host_files_record_sent(
            host=ctx.host,
            files=[self.files[n] for n in names if n in self.files],
            held=self.held,
            now=ctx.now,
        )
        self.held |= names


def _non_cpu_intensive(dispatcher: Dispatcher, app_id: int) -> bool:
    app = dispatcher.versions.apps.get(app_id)
    return app is not None and app.non_cpu_intensive


def _effective_wait_period(project: Project) -> float:
    """The wait period, when something can answer a need-work signal: the project's
    generator, or (with trigger directories) an external BOINC one. Otherwise waiting
    would cost every RPC N seconds for nothing, and the file is handled as with N = 0."""
    if project.locality_work_generator or trigger_root(project) is not None:
        return project.locality_scheduling_wait_period
    return 0.0


def _new_pass(dispatcher: Dispatcher, *, waited: set[str]) -> _LocalityPass:
    ctx = dispatcher.ctx
    assert ctx.host is not None
    # Seeded by request so a run can be replayed; hosts and RPCs still differ (no flocking).
    rng = random.Random(f"{ctx.project.id}:{ctx.host.id}:{ctx.now.isoformat()}")
    return _LocalityPass(dispatcher=dispatcher, waited=waited, rng=rng, first_job=len(ctx.sent))


def send_locality_work(dispatcher: Dispatcher) -> None:
    """The locality job source (registered before the general source)."""
    ctx = dispatcher.ctx
    if not ctx.project.locality_scheduling:
        return
    lp = _new_pass(dispatcher, waited=set())
    reported = {s.name for s in ctx.req.sticky_files[:MAX_REPORTED_FILES] if s.status >= 0}
    names = lp.load_host_files(reported, complete=len(ctx.req.sticky_files) <= MAX_REPORTED_FILES)
    for name in order_host_files(
        names, sorted_order=ctx.project.locality_scheduling_sorted_order, rng=lp.rng
    ):
        if not dispatcher.need.work_needed():
            break
        lp.file_on_host(name)
    if lp.waits:
        # A host holding X with no results for X waits for X's on-demand work
        # and queries again; a new file now would be a large download the wait may make
        # useless. The retry after the commit starts the host on one if still needed.
        _pending.set(_PendingWaits(ctx=ctx, files=lp.waits, held=set(lp.held), tried=set(lp.tried)))
    else:
        lp.new_files()
        _pending.set(None)
    lp.record_sent()


# --- after the commit: wait, then try the files once more -------------------------------------


def locality_retry_after_commit(ctx: RpcContext, reply: SchedulerReply) -> SchedulerReply:
    """The scheduler calls this after the RPC's transaction commits, with the reply built.

    If the locality source asked the generator for work for files on the host, poll for
    up to ``locality_scheduling_wait_period`` seconds (at most ``MAX_WAIT_SECONDS``)
    holding no transaction and no lock, then, in a second short transaction, try those
    files once more and start the host on a new file if it still needs work, and return
    the reply with the extra jobs and deletions. Any failure here keeps the first reply:
    its jobs are already committed as sent to this host.
    """
    pending = _pending.get()
    _pending.set(None)
    if pending is None or pending.ctx is not ctx or not pending.files:
        return reply
    waited = not connection.in_atomic_block
    if not waited:
        # The caller wraps the RPC in its own transaction: sleeping here would hold it.
        # Only the new-file search the first pass put off runs, as if there were no wait.
        logger.warning("locality: RPC inside an outer transaction; not waiting for on-demand work")
    try:
        if waited:
            _wait_for_work(ctx, pending.files)
        deletes_before = len(ctx.delete_file_infos)
        added = _retry_files(ctx, pending, waited=waited)
        if not added and len(ctx.delete_file_infos) == deletes_before:
            return reply
        if added:
            _replace_sent_message(ctx)
        return reply_build(ctx, no_rsc_apps=reply.no_rsc_apps)
    except Exception:
        logger.exception("locality: retry after the wait failed; sending the first reply")
        return reply


def _wait_for_work(ctx: RpcContext, files: list[str]) -> None:
    """Poll without a transaction until a file has unsent results or is marked "no work
    available", or the wait period ends (the retry runs either way: a file still
    without work is then marked, and deleted from the host)."""
    project = ctx.project
    deadline = monotonic() + min(_effective_wait_period(project), MAX_WAIT_SECONDS)
    while True:
        if any_file_has_unsent(project=project, file_names=files) or any_file_no_work_available(
            project=project, file_names=files
        ):
            return
        remaining = deadline - monotonic()
        if remaining <= 0:
            return
        sleep(min(POLL_INTERVAL, remaining))


def _retry_files(ctx: RpcContext, pending: _PendingWaits, *, waited: bool) -> int:
    """The second, short transaction: the waited-for files once more (if ``waited``),
    then new files while the host needs work. Returns jobs added."""
    assert ctx.account is not None
    before = len(ctx.sent)
    with transaction.atomic():
        # The locks of the RPC's own transaction, in its order: other RPCs of this user
        # (one result per user per workunit) and of this host (its host_app_version
        # rows, reloaded here, since another RPC may have changed them during the wait).
        if ctx.project.one_result_per_user_per_wu:
            advisory_xact_lock(f"scheduler.user:{ctx.account.pk}")
        host_app_versions_lock(ctx)
        versions = host_versions(ctx)
        need = work_need(ctx)
        for job in ctx.sent:  # what the first pass already sent no longer needs filling
            need.record_job(
                proc_type=job.option.proc_type,
                est_dur=job.est_dur,
                avg_ncpus=job.option.avg_ncpus,
                gpu_usage=job.option.gpu_usage,
            )
        if not need.work_needed():
            return 0
        dispatcher = Dispatcher(ctx, versions, need, in_progress_limits(ctx, versions))
        dispatcher.disk_used = sum(job.result.workunit.rsc_disk_bound for job in ctx.sent)
        lp = _new_pass(dispatcher, waited=set(pending.files) if waited else set())
        lp.held = set(pending.held)
        lp.tried = set(pending.tried)
        if waited:
            lp.load_host_files(set(pending.files), complete=False)  # only the waited files
            for name in pending.files:
                if not need.work_needed():
                    break
                lp.file_on_host(name)
        lp.new_files()
        lp.record_sent()
        dispatcher.flush()
    return len(ctx.sent) - before


def _replace_sent_message(ctx: RpcContext) -> None:
    """The first pass said "No tasks sent" or "Sent N task(s)"; say the new total."""
    ctx.messages[:] = [
        m for m in ctx.messages if not (m.text.startswith("No tasks sent") or m.text.startswith("Sent "))
    ]
    ctx.message(f"Sent {len(ctx.sent)} task(s).")
