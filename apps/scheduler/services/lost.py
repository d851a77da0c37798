"""Results the server sent to a host that the host no longer holds.

Two of BOINC's rules (sched/handle_request.cpp mark_results_over, sched/sched_resend.cpp):

* A client that attaches again after a detach (no hostid, recognised by its host_cpid)
  and lists no tasks has dropped everything it held: its in-progress results become
  OVER with outcome CLIENT_DETACHED at once, and the transitioner replaces them, instead
  of leaving them to their deadlines on a host that forgot them.
* With the project's ``resend_lost_results``, a result in progress on the host that the
  host does not list in ``<other_results>`` (a lost reply, or a project reset) is sent
  again with a fresh deadline; one that is no longer needed, could not finish in time, is
  of an application that is deprecated or that the volunteer no longer selects, or has no
  version this host can run, is made to time out now so the transitioner does the rest.
  One whose versions use a resource the request asks no work for stays in progress.

Work-sequence steps are left to the sequence source, which resends and relocates them
by the rules in docs/sequences.md.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import connection

from apps.credit.domain.runtime import estimated_duration
from apps.scheduler.domain.policy import choose_version
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.dispatch import Dispatcher
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result
from apps.work.queries import results_with_workunits

logger = logging.getLogger(__name__)

# BOINC's resend_frac: a resent result gets half its original time again (at least its
# old deadline, at most the workunit's delay bound from now).
RESEND_FRAC = 0.5


def detached_results_over(ctx: RpcContext) -> int:
    """BOINC's mark_results_over for a re-attached client; returns the results ended."""
    req, host = ctx.req, ctx.host
    assert host is not None
    if not ctx.reattached or req.allow_multiple_clients or req.other_results:
        return 0
    reported = {r.name for r in req.results}
    dropped = [
        (rid, name, wu_id)
        for rid, name, wu_id in Result.objects.filter(
            project=ctx.project,
            host=host,
            server_state=ServerState.IN_PROGRESS,
            workunit__sequence_id__isnull=True,
        ).values_list("id", "name", "workunit_id")
        if name not in reported
    ]
    if not dropped:
        return 0
    ended = Result.objects.filter(
        id__in=[rid for rid, _, _ in dropped], server_state=ServerState.IN_PROGRESS
    ).update(server_state=ServerState.OVER, outcome=Outcome.CLIENT_DETACHED, received_time=ctx.now)
    ctx.transition_time_lower((wu_id for _, _, wu_id in dropped), ctx.now)
    logger.info("scheduler %s: host %s re-attached; %d result(s) ended", ctx.project.slug, host.id, ended)
    return ended


def lost_results_resend(dispatcher: Dispatcher) -> int:
    """BOINC's resend_lost_work; returns the results sent again (then no new work goes out)."""
    ctx = dispatcher.ctx
    req, host = ctx.req, ctx.host
    assert host is not None
    if not ctx.project.resend_lost_results or req.other_results is None:
        return 0
    listed = {o.name for o in req.other_results} | {r.name for r in req.results}
    # SKIP LOCKED: the host row is already written, and waiting for a result's lock after it
    # would invert the lock order daemons rely on; a result a daemon holds is resent next time.
    lock = " FOR UPDATE OF r SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    in_progress = results_with_workunits(
        "r.project_id = %s AND r.host_id = %s AND r.server_state = %s AND w.sequence_id IS NULL",
        [ctx.project.id, host.id, int(ServerState.IN_PROGRESS)],
        tail=f" ORDER BY r.id{lock}",
    )
    resent = 0
    for result in in_progress:
        if result.name in listed:
            continue
        if _resend_one(dispatcher, result):
            resent += 1
    return resent


def _resend_one(dispatcher: Dispatcher, result: Result) -> bool:
    ctx, wu = dispatcher.ctx, result.workunit
    refused = _app_refused(dispatcher, result.app_id)
    if refused:
        # As BOINC: not resent, and timed out now so that another host gets the job soon.
        _expire(ctx, result)
        ctx.message(f"Didn't resend lost result {result.name} ({refused})", notice=True)
        return False
    options = [o for o in dispatcher.versions.options.get(result.app_id, ()) if o.projected_flops > 0]
    if not options:
        # No version of the app this host can run (withdrawn, or a plan class it no longer
        # meets): it would otherwise sit here until its deadline.
        _expire(ctx, result)
        ctx.message(
            f"Didn't resend lost result {result.name} (no application version for this computer)", notice=True
        )
        return False
    option = choose_version(options, dispatcher.need)
    if option is None:
        # Versions exist, but for a resource this request does not ask work for: it stays in
        # progress and goes out again with a later request that does.
        return False
    delay = _new_delay(result, ctx)
    est_dur = estimated_duration(
        fpops_est=wu.rsc_fpops_est,
        projected_flops=option.projected_flops,
        available_frac=dispatcher.need.available_frac(option.proc_type),
    )
    if wu.error_mask or wu.canonical_result_id or est_dur > delay:
        _expire(ctx, result)
        ctx.message(f"Didn't resend lost result {result.name} (expired)", notice=True)
        return False
    if not dispatcher.send(result, option, est_dur, delay_bound=delay, resend=True):
        return False  # no deadline for it (logged): it stays in progress and times out
    ctx.message(f"Resent lost result {result.name}", notice=True)
    return True


def _app_refused(dispatcher: Dispatcher, app_id: int) -> str | None:
    """Why the result's app takes no resend on this host: deprecated (it is not in the
    catalog), or not among the applications the volunteer selected; None if it does."""
    if app_id not in dispatcher.versions.apps:
        return "application deprecated"
    selected = dispatcher.ctx.prefs.apps_selected
    if selected and app_id not in selected:
        return "application not selected"
    return None


def _new_delay(result: Result, ctx: RpcContext) -> float:
    """Seconds from now to the resent result's deadline (possibly_give_result_new_deadline)."""
    now = ctx.now
    old_deadline = result.report_deadline or now
    sent = result.sent_time or now
    deadline = now + RESEND_FRAC * (old_deadline - sent)
    deadline = max(deadline, old_deadline)
    # In seconds: now plus an absurd delay_bound (edited in by hand) would overflow a datetime.
    return max(min((deadline - now).total_seconds(), result.workunit.delay_bound), 0.0)


def _expire(ctx: RpcContext, result: Result) -> None:
    """Make the transitioner time the result out on its next pass (its deadline plus the
    grace period is now past), as BOINC does for a lost result it will not resend."""
    past = ctx.now - timedelta(seconds=ctx.project.report_grace_period + 1)
    Result.objects.filter(id=result.id, server_state=ServerState.IN_PROGRESS).update(report_deadline=past)
    ctx.transition_time_lower((result.workunit_id,), ctx.now)
