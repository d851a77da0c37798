"""Work sequences in the scheduler RPC (docs/sequences.md, "Scheduling").

``sequences_prepare`` runs in every RPC before work is sent, whatever the request asks:

1. find the sequences the host shows it holds: those of the results it lists (``other_results``)
   or reports, and, from a Cobblestone-aware client, the names in ``work_sequences``;
2. for each, tell the host what it is: still its own (more steps follow), ended
   (``sequences_ended``; the assignment is removed), or no longer its own
   (``sequences_unassigned``; its results there were retired, so ``results_to_abort`` aborts them);
3. a sequence assigned to the host that the host does not hold any more is lost: with a
   ``work_sequences`` list, when not listed; from a stock client, when the host lists none of its
   results though some are in progress on the server. It is relocated (sequence_relocate);
4. once a step was reported, the host may delete the state its predecessor left (``delete_file_info``);
5. if the request asks for no work, the host's sequences are still topped up to MIN_AHEAD steps,
   so it never waits for an upload to start its next step.

``send_sequence_work`` is the first job source: a host that holds sequences gets their next steps
(``results_to_send``: in order, up to what the request asks, at least MIN_AHEAD ahead, the
request-driven part bounded by ``App.max_sequence_job_fraction``). Non-sequence work starves on such
hosts, as BOINC's design intends; the bound leaves the rest of the request to the other sources.
Steps the server sent but the host does not list are sent again (a lost reply). A host that holds
none is given one unassigned sequence, and only if it finishes one result within the sequence's
maximum result time (the fastest usable version's runtime estimate). The head row is
claimed with a conditional UPDATE from UNASSIGNED (and read with SKIP LOCKED on PostgreSQL), so
two hosts never get the same sequence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from django.db.models import Q

from apps.core.domain.resources import ProcType
from apps.credit.domain.runtime import estimated_duration
from apps.scheduler.domain.policy import VersionOption, WorkNeed, job_infeasible
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.dispatch import (
    Dispatcher,
    delay_bound_sendable,
    in_progress_limits,
    unsendable_log,
)
from apps.scheduler.services.versions import HostVersions
from apps.sequences.domain.rules import (
    SequenceSnapshot,
    has_failed_step,
    host_can_take_sequence,
    mark_dispatched,
    max_sequence_jobs,
    results_to_send,
)
from apps.sequences.models import WorkSequence
from apps.sequences.services import sequence_relocate
from apps.sequences.services.hosts import sequence_assign, sequence_release_notified, state_files_released
from apps.sequences.services.replica_check import replica_host_fits
from apps.sequences.services.rows import Chain, chain_load, head_get, head_save, heads_locked
from apps.sequences.services.steps import default_delay_bound
from apps.work.domain.states import SequenceState, ServerState
from apps.work.models import Result, Workunit

CANDIDATE_WINDOW = 20
TOO_SLOW = "This computer is not fast enough for the project's work sequences (maximum result time)"


# --- every RPC ---------------------------------------------------------------------------------


def sequences_prepare(
    ctx: RpcContext, versions: HostVersions, need_for: Callable[[RpcContext], WorkNeed]
) -> None:
    """Sequence notices, lost sequences, released state files, and the MIN_AHEAD floor (module doc)."""
    if ctx.host is None:
        return
    if not project_catalog(ctx.project).uses_sequences and not ctx.req.work_sequences:
        return
    held = _reconcile(ctx)
    _release_states(ctx)
    if not held or ctx.req.dont_send_work or ctx.req.work_request.wants_work:
        return  # when work is wanted, send_sequence_work runs as the first job source
    dispatcher = Dispatcher(ctx, versions, need_for(ctx), in_progress_limits(ctx, versions))
    for seq in held:
        _send_steps(dispatcher, seq)
    dispatcher.flush()


def _shown(ctx: RpcContext) -> dict[int, set[str]]:
    """Sequence id -> names of its results that the host lists or reports."""
    names = {r.name for r in ctx.req.results} | {o.name for o in ctx.req.other_results or ()}
    shown: dict[int, set[str]] = {}
    if names:
        rows = Result.objects.filter(
            project=ctx.project, name__in=names, workunit__sequence_id__isnull=False
        ).values_list("name", "workunit__sequence_id")
        for name, seq_id in rows:
            assert seq_id is not None  # sequence_id__isnull=False above
            shown.setdefault(seq_id, set()).add(name)
    return shown


def _reconcile(ctx: RpcContext) -> list[WorkSequence]:
    """Steps 1-3 of the module doc; returns the sequences the host holds and keeps."""
    host = ctx.host
    assert host is not None
    shown = _shown(ctx)
    listed_names = set(ctx.req.work_sequences or ())
    seqs = WorkSequence.objects.filter(project=ctx.project).filter(
        Q(id__in=list(shown)) | Q(name__in=listed_names) | Q(assigned_host=host)
    )
    held = []
    found = set()
    for seq in seqs.order_by("id"):
        found.add(seq.name)
        shows = seq.id in shown or seq.name in listed_names
        mine = seq.assigned_host_id == host.id
        if mine and seq.state in (SequenceState.ENDED, SequenceState.ERROR):
            _notify_over(ctx, seq)
        elif mine and seq.state == SequenceState.ASSIGNED:
            if _lost(ctx, seq, shows):
                sequence_relocate(sequence_id=seq.id, now=ctx.now, host_id=host.id)
                ctx.sequences_unassigned.append(seq.name)
            else:
                held.append(seq)
        elif shows and seq.state == SequenceState.ENDED:
            ctx.sequences_ended.append(seq.name)
        elif shows:
            ctx.sequences_unassigned.append(seq.name)
    # A listed sequence that is not (or no longer) the host's is named in the reply,
    # so the host drops it, also when the project has no such sequence at all.
    ctx.sequences_unassigned.extend(sorted(listed_names - found))
    return held


def _lost(ctx: RpcContext, seq: WorkSequence, shows: bool) -> bool:
    if ctx.req.work_sequences is not None:
        return seq.name not in ctx.req.work_sequences  # a Cobblestone-aware client lists what it holds
    if shows or ctx.req.other_results is None:
        return False
    # A stock client lists its tasks; an idle holder (every step reported) still holds the state.
    return Result.objects.filter(
        workunit__sequence_id=seq.id, host=ctx.host, server_state=ServerState.IN_PROGRESS
    ).exists()


def _notify_over(ctx: RpcContext, seq: WorkSequence) -> None:
    """The host learns that its sequence ended (or failed for good); the assignment goes."""
    assert ctx.host is not None  # job sources run for an authenticated host
    if seq.state == SequenceState.ENDED:
        ctx.sequences_ended.append(seq.name)
    else:
        ctx.sequences_unassigned.append(seq.name)
    ctx.delete_file_infos.extend(sequence_release_notified(sequence=seq, host=ctx.host))


def _release_states(ctx: RpcContext) -> None:
    """Step 4: a reported step's predecessor state is no longer needed on this host."""
    assert ctx.host is not None  # job sources run for an authenticated host
    ctx.delete_file_infos.extend(
        state_files_released(project=ctx.project, host=ctx.host, reported=[r.name for r in ctx.req.results])
    )


# --- the job source ----------------------------------------------------------------------------


def send_sequence_work(dispatcher: Dispatcher) -> None:
    """First job source: the held sequences' next steps, or a new sequence for a host with none."""
    ctx = dispatcher.ctx
    if not project_catalog(ctx.project).uses_sequences:
        return
    held = list(
        WorkSequence.objects.filter(project=ctx.project, state=SequenceState.ASSIGNED, assigned_host=ctx.host)
    )
    for seq in held:
        _send_steps(dispatcher, seq)
    if not held:
        _assign_one(dispatcher)


def _option(dispatcher: Dispatcher, app_id: int, *, wanted: bool) -> VersionOption | None:
    """The fastest usable version; ``wanted``: only for resources the request still asks for."""
    need, versions = dispatcher.need, dispatcher.versions
    options = [
        o
        for o in versions.options.get(app_id, ())
        if o.projected_flops > 0
        and o.proc_type not in need.disallowed
        and dispatcher.limits.allows(o.app_id, o.proc_type)
        and versions.quota_allows(o)
        and (not wanted or need.needs(o.proc_type))
    ]
    return max(options, key=lambda o: (o.projected_flops, -o.key), default=None)


def _requested(need: WorkNeed, option: VersionOption) -> tuple[int, float]:
    """(jobs, seconds of one job's duration) the request still asks of the option's resource."""
    if not need.needs(option.proc_type):
        return 0, 0.0
    usage = option.avg_ncpus if option.proc_type is ProcType.CPU else option.gpu_usage
    usage = usage if usage > 0 else 1.0
    if not need.rsc_spec_request:
        return 0, max(need.seconds_to_fill, 0.0)
    resource = need.resources[option.proc_type]
    return math.ceil(max(resource.req_instances, 0.0) / usage), max(resource.req_secs, 0.0) / usage


def _mix_cap(dispatcher: Dispatcher, fraction: float, wanted: int) -> int | None:
    """App.max_sequence_job_fraction as a cap on request-driven sequence jobs (None: no cap)."""
    remaining = max(dispatcher.need.max_jobs - dispatcher.need.njobs_sent, 0)
    if fraction >= 1:
        return remaining
    in_progress = Result.objects.filter(host=dispatcher.ctx.host, server_state=ServerState.IN_PROGRESS)
    total = in_progress.count() + len(dispatcher.ctx.sent)
    seq_jobs = in_progress.filter(workunit__sequence_id__isnull=False).count() + sum(
        1 for job in dispatcher.ctx.sent if job.result.workunit.sequence_id
    )
    cap = max_sequence_jobs(
        host_sequence_jobs=seq_jobs, host_total_jobs=total, requested_jobs=wanted, max_fraction=fraction
    )
    return remaining if cap is None else min(cap, remaining)


def _feasible(dispatcher: Dispatcher, wu: Workunit, est: float) -> bool:
    """Memory and disk; the delay bound of a step is derived from max_result_time instead."""
    limits = replace(dispatcher.host_limits, ignore_delay_bound=True)
    return (
        job_infeasible(
            est_dur=est,
            estimated_delay=0.0,
            delay_bound=wu.delay_bound,
            rsc_memory_bound=wu.rsc_memory_bound,
            rsc_disk_bound=wu.rsc_disk_bound,
            limits=limits,
            disk_used=dispatcher.disk_used,
        )
        is None
    )


def _estimate(dispatcher: Dispatcher, wu: Workunit, option: VersionOption) -> float:
    return estimated_duration(
        fpops_est=wu.rsc_fpops_est,
        projected_flops=option.projected_flops,
        available_frac=dispatcher.need.available_frac(option.proc_type),
    )


def _send_steps(dispatcher: Dispatcher, seq: WorkSequence) -> int:
    """Send the held sequence's next steps (and resend lost ones); returns how many went."""
    ctx = dispatcher.ctx
    assert ctx.host is not None  # job sources run for an authenticated host
    head = head_get(seq.id, skip_locked=True)
    if head is None or head.state != SequenceState.ASSIGNED or head.assigned_host_id != ctx.host.id:
        return 0  # a daemon pass holds it, or it just moved
    chain = chain_load(head)
    if has_failed_step(chain.snapshot, chain.steps):
        return 0  # its later steps can never run; the sequence-deadline daemon relocates it
    option = _option(dispatcher, head.app_id, wanted=True)
    floor_only = option is None or not ctx.req.work_request.wants_work
    option = option or _option(dispatcher, head.app_id, wanted=False)
    if option is None:
        return 0
    sent = _resend_lost(dispatcher, chain, option)
    first = chain.workunit_at(chain.snapshot.first_undispatched_index)
    if first is None:
        return sent
    est = _estimate(dispatcher, first, option)
    jobs, seconds = (0, 0.0) if floor_only else _requested(dispatcher.need, option)
    wanted = max(jobs, math.ceil(seconds / est) if est > 0 and math.isfinite(est) else 0)
    steps = results_to_send(
        chain.snapshot,
        chain.steps,
        host_id=ctx.host.id,
        requested_jobs=jobs,
        requested_seconds=seconds,
        est_runtime=est,
        max_jobs=_mix_cap(dispatcher, head.app.max_sequence_job_fraction, wanted),
    )
    going = []
    # The host runs its steps one after another, each within max_result_time, so
    # the k-th step queued on it is due k max_result_times from now, or later by delay bound.
    queued = sum(
        1
        for r in chain.results.values()
        if r.host_id == ctx.host.id and r.server_state == ServerState.IN_PROGRESS
    )
    for step in steps:
        wu, result = chain.workunits[step.index], chain.results[step.index]
        if wu.error_mask or not _feasible(dispatcher, wu, est):
            break
        result.workunit = wu
        queued += 1
        delay_bound = max(wu.delay_bound, queued * head.max_result_time)
        if not dispatcher.send(result, option, _estimate(dispatcher, wu, option), delay_bound=delay_bound):
            break  # no deadline for it (logged); steps go out in order, so none after it either
        going.append(step)
    if going:
        head_save(chain, mark_dispatched(chain.snapshot, going), now=ctx.now)
    return sent + len(going)


def _resend_lost(dispatcher: Dispatcher, chain: Chain, option: VersionOption) -> int:
    """Steps in progress on this host that it does not list: the reply carrying them was lost."""
    ctx = dispatcher.ctx
    assert ctx.host is not None  # job sources run for an authenticated host
    if ctx.req.other_results is None:
        return 0
    listed = {o.name for o in ctx.req.other_results} | {r.name for r in ctx.req.results}
    lost = [
        r
        for r in chain.results.values()
        if r.host_id == ctx.host.id and r.server_state == ServerState.IN_PROGRESS and r.name not in listed
    ]
    sent = 0
    for result in sorted(lost, key=lambda r: r.id):
        wu = next(w for w in chain.workunits if w.id == result.workunit_id)
        result.workunit = wu
        if dispatcher.send(result, option, _estimate(dispatcher, wu, option)):
            sent += 1
    return sent


def _assign_one(dispatcher: Dispatcher) -> None:
    """Give a host that holds no sequence one it is fast enough for (module doc)."""
    ctx, need, versions = dispatcher.ctx, dispatcher.need, dispatcher.versions
    assert ctx.host is not None  # job sources run for an authenticated host
    app_ids = [a for a, options in versions.options.items() if any(need.needs(o.proc_type) for o in options)]
    if not app_ids:
        return
    qs = WorkSequence.objects.filter(
        project=ctx.project,
        state=SequenceState.UNASSIGNED,
        app_id__in=app_ids,
        first_undispatched__isnull=False,
    ).order_by("id")
    too_slow = False
    for seq in heads_locked(qs, skip_locked=True)[:CANDIDATE_WINDOW]:
        app = versions.apps[seq.app_id]
        if seq.name in ctx.sequences_unassigned or _taken_from(seq, ctx):
            continue  # taken from this host: it goes to another host
        if app.sequence_redundancy and not replica_host_fits(seq, ctx.host.id, now=ctx.now):
            continue  # replica chains must be computed by different hosts
        result = (
            Result.objects.filter(workunit_id=seq.first_undispatched_id, server_state=ServerState.INACTIVE)  # type: ignore[misc]  # None matches no result: skipped
            .select_related("workunit")
            .order_by("-id")
            .first()
        )
        option = dispatcher.option_for(result) if result is not None else None
        if result is None or option is None:
            continue
        est = _estimate(dispatcher, result.workunit, option)
        head = SequenceSnapshot(id=seq.id, max_result_time=seq.max_result_time)
        if not host_can_take_sequence(head, est):
            too_slow = True
            continue
        jobs, seconds = _requested(need, option)
        wanted = max(jobs, math.ceil(seconds / est) if math.isfinite(est) else 0, 1)
        if _mix_cap(dispatcher, app.max_sequence_job_fraction, wanted) == 0:
            continue  # the app's sequence-job fraction leaves this request to other work
        if not _feasible(dispatcher, result.workunit, est):
            continue
        if not delay_bound_sendable(max(result.workunit.delay_bound, seq.max_result_time)):
            # Its first step could not be sent: claiming it would leave it held and idle.
            unsendable_log(
                ctx.project,
                f"sequence {seq.name}",
                "scheduler %s: sequence %s not assigned: its steps get no deadline",
                ctx.project.slug,
                seq.name,
            )
            continue
        if not sequence_assign(sequence_id=seq.id, host=ctx.host, now=ctx.now):
            continue
        ctx.sequences_assigned.append(seq.name)
        _send_steps(dispatcher, seq)
        return
    if too_slow:
        ctx.no_work_reason(TOO_SLOW)


def _taken_from(seq: WorkSequence, ctx: RpcContext) -> bool:
    """Relocated from this host within one delay bound: another host should take it. After
    that the old host may have it back, so a project with one suitable host is not stuck."""
    assert ctx.host is not None  # job sources run for an authenticated host
    if seq.relocated_from_id != ctx.host.id or seq.relocated_time is None:
        return False
    # In seconds: a datetime plus an absurd max_result_time would overflow.
    return (ctx.now - seq.relocated_time).total_seconds() < default_delay_bound(seq.max_result_time)
