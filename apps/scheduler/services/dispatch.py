"""Sending work: the general job source and the mechanics every source uses to send a result.

Concurrency: on PostgreSQL the candidate unsent results are read with
``SELECT ... FOR UPDATE SKIP LOCKED``, so concurrent RPCs never wait for each other and
never pick the same row; the update that sends a result also requires it to still be
UNSENT. On SQLite every RPC's transaction takes the write lock at BEGIN (IMMEDIATE
mode), so RPCs run one at a time and stay correct.
"""

from __future__ import annotations

import logging
import math
from datetime import timedelta

from django.db import connection
from django.db.models import QuerySet

from apps.core.db import ModelColumns, placeholders, update_rows
from apps.core.domain.resources import ProcType
from apps.credit.convert import credit_policy, hav_apply, hav_stats
from apps.credit.domain.host_scale import probation_on_send
from apps.credit.domain.quota import count_sent
from apps.credit.domain.runtime import estimated_duration
from apps.hosts.models import HostAppVersion
from apps.projects.models import Project
from apps.scheduler.domain.policy import (
    HostLimits,
    Infeasible,
    InProgressLimits,
    VersionOption,
    WorkNeed,
    candidate_window,
    choose_version,
    job_infeasible,
    jobs_to_fill,
)
from apps.scheduler.queries import host_jobs_in_progress
from apps.scheduler.services.context import RpcContext, SentJob
from apps.scheduler.services.homogeneous import Homogeneity
from apps.scheduler.services.hosts import host_instances
from apps.scheduler.services.replication import Replication
from apps.scheduler.services.versions import HostVersions, host_app_versions_save
from apps.work.domain.states import ServerState
from apps.work.models import Result, Workunit
from apps.work.queries import results_with_workunits, transition_times_lower

logger = logging.getLogger(__name__)

# The columns a send sets on a result (the rest of the row stays as work creation wrote it).
SEND_FIELDS = (
    "server_state",
    "host",
    "account",
    "sent_time",
    "report_deadline",
    "flops_estimate",
    "avg_ncpus",
    "gpu_usage",
    "proc_type",
    "app_version",
    "anonymous_proc_type",
    "platform",
    "version_num",
    "plan_class",
)
# What a candidate window reads. Most candidates are not sent, and a sent one only needs
# what the send checks and the reply read (SEND_FIELDS are written before anything reads
# them); the rest (dates, stderr, credit, the workunit's JSON) would cost a conversion per
# row. A field left out loads on first access, one query per row: the statement-count
# test in tests/scheduler catches that.
# The workunit columns a send and the reply read (the assigned-jobs source reads them too).
CANDIDATE_WORKUNIT_FIELDS = (
    "id",
    "project",
    "app",
    "name",
    "command_line",
    "rsc_fpops_est",
    "rsc_fpops_bound",
    "rsc_memory_bound",
    "rsc_disk_bound",
    "delay_bound",
    "error_mask",
    "target_nresults",
    "locality_file_name",
    "sequence_id",
    "sequence_index",
    "hr_class",
    "app_version",
)
CANDIDATE_COLUMNS = (
    ModelColumns(Result, "r", ("id", "project", "app", "workunit", "name", "priority", "server_state")),
    ModelColumns(Workunit, "w", CANDIDATE_WORKUNIT_FIELDS),
)
# Candidate rows read (and locked) per query, growing when many are skipped (infeasible,
# or replicas already on this host). The first two are sized to the request instead
# when it can be (window_for_need): rows locked and not sent are skipped by every
# concurrent RPC until this one commits.
CANDIDATE_WINDOWS = (16, 32, 64, 64, 128, 128, 256, 256)
# Sized windows are rounded up to one of these: each LIMIT is its own prepared statement.
WINDOW_STEPS = (2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128)
# The smallest rsc_fpops_est seen in each app's last candidate window, in this process:
# the typical job the next request is sized with. Only the window size depends on it.
_typical_fpops: dict[int, float] = {}

# A delay bound past this gives no deadline the server can work with (datetime ends at year
# 9999, and the deadline plus a grace period must still be a date): such a job is not sent.
# Work creation caps delay_bound far lower (MAX_DELAY_BOUND); only rows written before that
# cap, or by hand, come near it.
MAX_SEND_DELAY_BOUND = 1e10  # about 317 years


def delay_bound_sendable(delay_bound: float) -> bool:
    """Whether now + ``delay_bound`` is a deadline (False for NaN, infinities, absurd sizes)."""
    return abs(delay_bound) <= MAX_SEND_DELAY_BOUND


# What this process has already logged as unsendable: such a row is met by every RPC that
# scans it, and one warning per process says enough (bounded, so it cannot grow for ever).
_unsendable_logged: set[tuple[int, str]] = set()
_UNSENDABLE_LOGGED_MAX = 10_000


def unsendable_log(project: Project, what: str, text: str, *args: object) -> None:
    """Log ``text`` for the job or sequence ``what`` once per process."""
    key = (project.id, what)
    if key in _unsendable_logged:
        return
    if len(_unsendable_logged) >= _UNSENDABLE_LOGGED_MAX:
        _unsendable_logged.clear()
    _unsendable_logged.add(key)
    logger.warning(text, *args)


def unsendable_logged_clear() -> None:
    """Forget what was logged (tests: ids repeat from one test's database to the next)."""
    _unsendable_logged.clear()


IN_PROGRESS_LIMIT_MESSAGE = "This computer has reached a limit on tasks in progress"
INFEASIBLE_MESSAGES = {
    Infeasible.MEMORY: "Tasks need more memory than this computer has",
    Infeasible.DISK: "Tasks need more disk space than BOINC may use on this computer",
    Infeasible.DEADLINE: "Tasks would not finish before their deadlines on this computer",
}


def lock_unsent(qs: QuerySet[Result]) -> QuerySet[Result]:
    """Row locks that concurrent schedulers skip instead of waiting on (PostgreSQL)."""
    if connection.features.has_select_for_update_skip_locked:
        return qs.select_for_update(skip_locked=True, of=("self",))
    return qs


class Dispatcher:
    """Sends results for one RPC; shared by the general, sequence and locality sources."""

    def __init__(
        self, ctx: RpcContext, versions: HostVersions, need: WorkNeed, limits: InProgressLimits
    ) -> None:
        self.ctx = ctx
        self.versions = versions
        self.need = need
        self.limits = limits
        host = ctx.host
        assert host is not None
        self.host_limits = HostLimits(
            memory_bytes=host.m_nbytes,
            disk_free_bytes=host.d_free,
            ignore_delay_bound=ctx.project.ignore_delay_bound,
        )
        self.disk_used = 0.0
        self.wus_on_host: set[int] = set()
        self.wus_of_user: set[int] = set()
        self.sent_results: list[Result] = []
        self.replication = Replication(ctx, versions)
        self.homogeneity = Homogeneity.for_rpc(ctx, versions)

    # --- checks -------------------------------------------------------------------------
    def load_exclusions(self, workunit_ids: set[int], *, host_checked: bool = False) -> None:
        """Never two results of one workunit to a host (or user, when configured).

        ``host_checked``: the candidate query already excluded workunits with a result on
        this host (NOT EXISTS), so only the user rule needs a query.
        """
        ids = workunit_ids - self.wus_on_host
        if not ids:
            return
        host = self.ctx.host
        assert host is not None
        if not host_checked:
            self.wus_on_host |= set(
                Result.objects.filter(workunit_id__in=ids, host=host).values_list("workunit_id", flat=True)
            )
        if self.ctx.project.one_result_per_user_per_wu:
            self.wus_of_user |= set(
                Result.objects.filter(workunit_id__in=ids, account=self.ctx.account).values_list(
                    "workunit_id", flat=True
                )
            )

    def _allowed(self, app_id: int) -> list[VersionOption]:
        """The app's versions for resources still wanted, within the in-progress limits and
        the daily quota; noting which limit left none, for the user's message."""
        refusal = self.homogeneity.app_refusal(app_id) if self.homogeneity is not None else None
        if refusal is not None:
            self.ctx.no_work_reason(refusal)
            return []
        wanted = [o for o in self.versions.options.get(app_id, ()) if self.need.needs(o.proc_type)]
        options = [o for o in wanted if self.limits.allows(o.app_id, o.proc_type)]
        if wanted and not options:
            self.ctx.no_work_reason(IN_PROGRESS_LIMIT_MESSAGE)
        allowed = [o for o in options if self.versions.quota_allows(o)]
        if options and not allowed:
            self.versions.quota_reached.add(app_id)
        return allowed

    def _usable(self, option: VersionOption) -> bool:
        return (
            self.need.needs(option.proc_type)
            and self.limits.allows(option.app_id, option.proc_type)
            and self.versions.quota_allows(option)
        )

    def _homogeneous(self, result: Result) -> bool:
        return self.homogeneity is not None and result.app_id in self.homogeneity.apps

    def _candidates(self, result: Result) -> list[VersionOption]:
        """The versions this host may run ``result`` with now, the workunit's homogeneous
        redundancy class and app version considered."""
        allowed = self._allowed(result.app_id)
        if self.homogeneity is None or not self._homogeneous(result):
            return allowed
        return self.homogeneity.narrow(result.workunit, allowed, self._usable)

    def option_for(self, result: Result) -> VersionOption | None:
        """The version for the app's jobs on this host; None: none of them can go now."""
        return choose_version(self._allowed(result.app_id), self.need)

    def try_send(self, result: Result, option: VersionOption | None = None) -> bool:
        """Send ``result`` if this host can take it now; the caller holds its row lock.

        A job that would miss its deadline on the chosen version's resource is offered to
        the next resource still wanting work, as BOINC's per-resource passes would: a busy
        GPU queue must not keep it from idle CPUs.
        """
        wu = result.workunit
        if wu.error_mask or wu.id in self.wus_on_host or wu.id in self.wus_of_user:
            return False
        if self._homogeneous(result):
            candidates = self._candidates(result)
            option = option if option in candidates else choose_version(candidates, self.need)
        else:
            option = option or self.option_for(result)
        tried: set[ProcType] = set()
        while option is not None:
            if not self.replication.allows(result, option):
                return False  # a retry waiting for a reliable host
            est_dur = estimated_duration(
                fpops_est=wu.rsc_fpops_est,
                projected_flops=option.projected_flops,
                available_frac=self.need.available_frac(option.proc_type),
            )
            delay_bound = self.replication.delay_bound(result, option, est_dur)
            why = job_infeasible(
                est_dur=est_dur,
                estimated_delay=self.need.estimated_delay(option.proc_type),
                delay_bound=delay_bound,
                rsc_memory_bound=wu.rsc_memory_bound,
                rsc_disk_bound=wu.rsc_disk_bound,
                limits=self.host_limits,
                disk_used=self.disk_used,
            )
            if why is None:
                return self.send(result, option, est_dur, delay_bound=delay_bound)
            self.ctx.no_work_reason(INFEASIBLE_MESSAGES[why])
            if why is not Infeasible.DEADLINE:
                return False  # memory and disk are the host's, whichever version runs it
            tried.add(option.proc_type)
            others = [o for o in self._candidates(result) if o.proc_type not in tried]
            option = choose_version(others, self.need)
        return False

    # --- sending ------------------------------------------------------------------------
    def send(
        self,
        result: Result,
        option: VersionOption,
        est_dur: float,
        *,
        delay_bound: float | None = None,
        resend: bool = False,
    ) -> bool:
        """Add ``result`` to the reply; its deadline is ``delay_bound`` (default the
        workunit's) from now. A ``resend`` of a lost result is not a new job for the host:
        it does not count again against its daily quota or in-progress limits.

        False, and nothing changed, when the delay bound gives no deadline: that one job is
        skipped (and logged) and the RPC goes on with others."""
        ctx, host = self.ctx, self.ctx.host
        assert host is not None
        wu = result.workunit
        delay_bound = wu.delay_bound if delay_bound is None else delay_bound
        if not delay_bound_sendable(delay_bound):
            unsendable_log(
                ctx.project,
                f"result {result.name}",
                "scheduler %s: result %s not sent: delay bound %r s gives no deadline",
                ctx.project.slug,
                result.name,
                delay_bound,
            )
            return False
        if not resend and self.homogeneity is not None and not self.homogeneity.commit(result, option):
            return False  # another class or version has it now (or another RPC is sending it)
        result.server_state = ServerState.IN_PROGRESS
        result.host = host
        result.account = ctx.account
        result.sent_time = ctx.now
        result.report_deadline = ctx.now + timedelta(seconds=delay_bound)
        result.flops_estimate = option.peak_flops
        result.avg_ncpus = option.avg_ncpus
        result.gpu_usage = option.gpu_usage
        result.proc_type = option.proc_type.value
        if option.anonymous:
            cav = self.versions.client_versions[option.key]
            result.app_version = None
            result.anonymous_proc_type = option.proc_type.value
            result.platform, result.version_num, result.plan_class = (
                cav.platform,
                cav.version_num,
                cav.plan_class,
            )
        else:
            version = self.versions.versions[option.key]
            result.app_version = version
            result.anonymous_proc_type = ""
            result.platform = version.platform.name
            result.version_num, result.plan_class = version.version_num, version.plan_class
        self.sent_results.append(result)
        self.wus_on_host.add(wu.id)
        self.wus_of_user.add(wu.id)
        self.disk_used += wu.rsc_disk_bound
        self.need.record_job(
            proc_type=option.proc_type,
            est_dur=est_dur,
            avg_ncpus=option.avg_ncpus,
            gpu_usage=option.gpu_usage,
        )
        if not resend:
            self.limits.add(option.app_id, option.proc_type)
            self._count_on_host_app_version(option, delay_bound)
            self.replication.on_send(result, option)
        ctx.sent.append(
            SentJob(result=result, option=option, est_dur=est_dur, projected_flops=option.projected_flops)
        )
        return True

    def _count_on_host_app_version(self, option: VersionOption, delay_bound: float) -> None:
        """n_jobs_today += 1, and start the probation clock (scale probation against cherry picking)."""
        key = self.versions.hav_key(option)
        hav = self.versions.havs.get(key)
        if hav is None:
            hav = HostAppVersion(
                host=self.ctx.host,
                app_id=option.app_id,
                app_version_id=None if option.anonymous else option.key,
                anonymous_proc_type=option.proc_type.value if option.anonymous else "",
            )
            self.versions.havs[key] = hav
        app = self.versions.apps[option.app_id]
        stats = probation_on_send(
            count_sent(hav_stats(hav)),
            delay_bound=delay_bound,
            now=self.ctx.now_unix,
            policy=credit_policy(app, self.ctx.project),
        )
        hav_apply(hav, stats)
        if hav.pk:
            self.versions.dirty_havs[hav.pk] = hav

    def flush(self) -> None:
        """Write the sent results, the host_app_version counters and the transition times
        (one statement on PostgreSQL, with whatever else the RPC's write batch holds)."""
        if self.sent_results:
            update_rows(Result, self.sent_results, SEND_FIELDS, batch=self.ctx.writes)
            self._lower_transition_times()
            self.replication.flush()
        new_havs = [h for h in self.versions.havs.values() if h.pk is None]
        if new_havs:
            HostAppVersion.objects.bulk_create(new_havs)
        host_app_versions_save(self.ctx)
        transition_times_save(self.ctx)
        self.ctx.writes.flush()

    def _lower_transition_times(self) -> None:
        """The transitioner must look at each workunit when its new result times out
        (deadline + grace period), as BOINC lowers transition_time on send."""
        grace = timedelta(seconds=self.ctx.project.report_grace_period)
        for result in self.sent_results:
            assert result.report_deadline is not None
            self.ctx.transition_time_lower((result.workunit_id,), result.report_deadline + grace)


def transition_times_save(ctx: RpcContext) -> None:
    """Write the transition times this RPC brought forward (into its write batch) and forget them."""
    if ctx.transition_times:
        transition_times_lower(ctx.transition_times, batch=ctx.writes)
        ctx.transition_times.clear()


def send_general_work(dispatcher: Dispatcher) -> None:
    """The general source: unsent results of apps this host can run, by priority then age.

    Windows of candidates are read in (priority desc, id) order with keyset paging. An
    app for which no version can be chosen (resource not needed, in-progress limit or
    daily quota reached) cannot become choosable later in this RPC, so it is dropped from
    the scan at once: a host at its quota costs a window, not the whole queue.
    """
    ctx, need = dispatcher.ctx, dispatcher.need
    apps = dispatcher.versions.apps
    # Jobs of non-CPU-intensive apps go out one per host, by their own source (as BOINC).
    live_apps = {
        app_id
        for app_id, options in dispatcher.versions.options.items()
        if any(need.needs(o.proc_type) for o in options) and not apps[app_id].non_cpu_intensive
    }
    after: tuple[int, int] | None = None
    for i, scheduled in enumerate(CANDIDATE_WINDOWS):
        if not need.work_needed() or not live_apps:
            return
        # The first two windows are sized to what is still wanted (the second twice over,
        # as the first fell short); then the fixed schedule, so a host that most candidates
        # do not suit still looks as deep into the queue.
        sized = window_for_need(dispatcher, live_apps) if i < 2 else None
        window_size = scheduled if sized is None else _window_step(sized << i)
        window = unsent_window(ctx, sorted(live_apps), after, window_size, homogeneity=dispatcher.homogeneity)
        if not window:
            return
        after = (window[-1].priority, window[-1].id)
        _remember_job_sizes(window)
        dispatcher.load_exclusions({r.workunit_id for r in window}, host_checked=True)
        for result in window:
            if not need.work_needed():
                return
            if result.app_id not in live_apps:
                continue
            option = dispatcher.option_for(result)
            if option is None:
                live_apps.discard(result.app_id)
                continue
            dispatcher.try_send(result, option)


def window_for_need(dispatcher: Dispatcher, app_ids: set[int]) -> int | None:
    """Candidate rows for about the jobs still wanted, or None if they cannot be counted.

    A typical job of each app is the smallest seen in its last window; on each resource
    it would run the version ``choose_version`` picks now. With a size for every needed
    resource, ``jobs_to_fill`` counts the jobs.
    """
    need = dispatcher.need
    job_size: dict[ProcType, tuple[float, float]] = {}
    for app_id in app_ids:
        fpops = _typical_fpops.get(app_id)
        if fpops is None:
            return None
        option = choose_version(dispatcher.versions.options.get(app_id, ()), need)
        if option is None:
            continue
        duration = estimated_duration(
            fpops_est=fpops,
            projected_flops=option.projected_flops,
            available_frac=need.available_frac(option.proc_type),
        )
        usage = option.avg_ncpus if option.proc_type is ProcType.CPU else option.gpu_usage
        known = job_size.get(option.proc_type)
        if known is None or duration * usage < known[0] * known[1]:
            job_size[option.proc_type] = (duration, usage)
    return candidate_window(jobs_to_fill(need, job_size))


def _window_step(rows: int) -> int:
    return next((step for step in WINDOW_STEPS if step >= rows), WINDOW_STEPS[-1])


def _remember_job_sizes(window: list[Result]) -> None:
    smallest: dict[int, float] = {}
    for result in window:
        fpops = result.workunit.rsc_fpops_est
        if fpops < smallest.get(result.app_id, math.inf):
            smallest[result.app_id] = fpops
    _typical_fpops.update(smallest)


def unsent_window(
    ctx: RpcContext,
    app_ids: list[int],
    after: tuple[int, int] | None,
    limit: int,
    *,
    homogeneity: Homogeneity | None = None,
    with_locality_work: bool = False,
) -> list[Result]:
    """One window of unsent results (with their workunits), locked, in dispatch order.
    ``with_locality_work``: under locality scheduling, include the work of locality files too.

    Hand-written SQL (see ModelColumns): the ORM spent more time building this query than
    the database spent running it. Results of workunits already on this host are left out
    (NOT EXISTS), so the host-exclusion rule needs no second query.
    """
    host = ctx.host
    assert host is not None
    where = [
        f"r.project_id = %s AND r.server_state = {int(ServerState.UNSENT)}"
        f" AND r.app_id IN ({placeholders(app_ids)})"
        " AND NOT EXISTS (SELECT 1 FROM work_result o WHERE o.workunit_id = r.workunit_id AND o.host_id = %s)"
    ]
    params: list[object] = [ctx.project.id, *app_ids, host.id]
    if ctx.project.locality_scheduling and not with_locality_work:
        # Locality scheduling: FILENAME__* work is sent only by the locality source, which
        # replaces this scan for it as BOINC's send_work_locality does; other work stays here.
        where.append(" AND w.locality_file_name = ''")
    classes = homogeneity.window_filter(app_ids) if homogeneity is not None else None
    if classes is not None:
        where.append(classes[0])
        params += classes[1]
    if after is not None:
        where.append(" AND (r.priority < %s OR (r.priority = %s AND r.id > %s))")
        params += [after[0], after[0], after[1]]
    tail = f" ORDER BY r.priority DESC, r.id LIMIT {int(limit)}"
    if connection.features.has_select_for_update_skip_locked:
        tail += " FOR UPDATE OF r SKIP LOCKED"
    return results_with_workunits("".join(where), params, tail=tail, columns=CANDIDATE_COLUMNS)


def in_progress_limits(ctx: RpcContext, versions: HostVersions) -> InProgressLimits:
    """Per-host in-progress caps: the app's CPU/GPU limits and the project's per-device ones."""
    host = ctx.host
    assert host is not None
    limits = InProgressLimits()
    instances = host_instances(ctx)  # effective counts, as BOINC's max_jobs_in_progress.reset
    for app in versions.apps.values():
        for proc in (ProcType.CPU, *instances.gpus):
            per_app = app.max_gpu_jobs_in_progress if proc.is_gpu else app.max_jobs_in_progress
            if per_app:
                limits.app_limits[(app.id, proc)] = per_app
    if ctx.project.max_wus_in_progress:
        limits.resource_limits[ProcType.CPU] = ctx.project.max_wus_in_progress * instances.ncpus
    if ctx.project.max_wus_in_progress_gpu:
        for proc, count in instances.gpus.items():
            limits.resource_limits[proc] = ctx.project.max_wus_in_progress_gpu * count
    if not limits.app_limits and not limits.resource_limits:
        return limits  # nothing to cap: the host's jobs need not be counted
    for app_id, proc_type in host_jobs_in_progress(host.id):
        limits.add(app_id, ProcType(proc_type) if proc_type else ProcType.CPU)
    return limits
