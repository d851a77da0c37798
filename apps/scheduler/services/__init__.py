"""The scheduler RPC: one request in, one reply out, in one database transaction."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from apps.core.db import advisory_xact_lock, use_generic_plans
from apps.core.domain.resources import ProcType
from apps.core.metrics import jobs_dispatched_count
from apps.core.stages import stage
from apps.projects.models import Project
from apps.protocol import MessagePriority, ReplyMessage, SchedulerReply, SchedulerRequest
from apps.scheduler.domain.policy import WorkNeed
from apps.scheduler.services.aborts import results_to_abort
from apps.scheduler.services.catalog import project_catalog
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.dispatch import Dispatcher, in_progress_limits, transition_times_save
from apps.scheduler.services.hosts import account_authenticate, host_identify
from apps.scheduler.services.lost import detached_results_over, lost_results_resend
from apps.scheduler.services.need import work_need
from apps.scheduler.services.prefs import global_prefs_exchange, rpc_project_prefs
from apps.scheduler.services.reply import reply_build
from apps.scheduler.services.reports import results_report
from apps.scheduler.services.sources import WORK_SOURCES
from apps.scheduler.services.sources.locality import locality_retry_after_commit
from apps.scheduler.services.sources.sequences import sequences_prepare
from apps.scheduler.services.trickles import trickles_exchange
from apps.scheduler.services.versions import (
    HostVersions,
    beta_work_withheld,
    host_app_versions_lock,
    host_app_versions_save,
    host_versions,
)

logger = logging.getLogger(__name__)

BAD_AUTHENTICATOR = "Invalid or missing account key.  To fix, remove and add this project."
# BOINC's answer to a host its project blocked: this message, a day's delay, nothing else
# (its reports are not taken either; the client keeps them).
BLOCKED_HOST = "Not accepting requests from this host"
BLOCKED_HOST_DELAY = 86400
SELECTED_APPS_NO_WORK = (
    "No tasks are available for the applications you have selected; you can allow other "
    "applications in your project preferences"
)


def scheduler_request_handle(
    *, project: Project, req: SchedulerRequest, now: datetime, remote_addr: str = ""
) -> SchedulerReply:
    """Handle one scheduler RPC (steps in order, all in one transaction):

    1. a stopped scheduler answers "project is down" and nothing else;
    2. authenticate by the account key; an unknown key gets BOINC's message and a long delay;
    3. identify (or create) the host and record its hardware; a client that attached again
       (found by host_cpid) has dropped its tasks, which end at once (services.lost); a
       blocked host gets BOINC's refusal and a day's delay, and nothing else is done;
    4. apply and acknowledge reported results;
    5. tell the host which of its results to abort;
    6. resend the host's lost results (resend_lost_results), or else send work, per
       resource (docs/protocol.md, work requests), from the sequence, locality and general sources;
    7. store the trickle-ups (acknowledged) and take the host's pending trickle-downs;
    8. build the reply with the user's and host's credit.
    """
    if project.sched_stopped:
        return SchedulerReply(
            project_is_down=True,
            request_delay=3600,
            scheduler_version=720,
            master_url=project.master_url,
            project_name=project.name,
        )
    ctx = RpcContext(project=project, req=req, now=now, remote_addr=remote_addr)
    with transaction.atomic():
        use_generic_plans()
        ctx.account = account_authenticate(ctx)
        if ctx.account is None:
            logger.info("scheduler %s: unknown authenticator from %s", project.slug, remote_addr or "?")
            return SchedulerReply(
                scheduler_version=720,
                project_name=project.name,
                master_url=project.master_url,
                messages=(_notice(BAD_AUTHENTICATOR),),
                request_delay=3600,
            )
        if project.one_result_per_user_per_wu:
            # The rule spans the user's hosts, whose RPCs would otherwise each see only the
            # other's committed results: take them one at a time.
            advisory_xact_lock(f"scheduler.user:{ctx.account.pk}")
        ctx.host = host_identify(ctx)
        if ctx.host.blacklisted:
            logger.info("scheduler %s: blocked host %s refused", project.slug, ctx.host.pk)
            return SchedulerReply(
                scheduler_version=720,
                project_name=project.name,
                master_url=project.master_url,
                messages=(ReplyMessage(text=BLOCKED_HOST, priority=MessagePriority.LOW),),
                request_delay=BLOCKED_HOST_DELAY,
            )
        ctx.prefs = rpc_project_prefs(ctx.account, ctx.host.venue)
        ctx.apps = project_catalog(project).apps
        host_app_versions_lock(ctx)
        # Before reports: a re-attached client dropped its tasks. After the host_app_version
        # locks, as every writer of results takes them (the daemons wait in the same order).
        with stage("report"):
            detached_results_over(ctx)
            results_report(ctx)
            ctx.writes.flush()  # the host and its reports, before anything reads results
        results_to_abort(ctx)
        versions = host_versions(ctx)
        if _platform_unsupported(ctx, versions):
            ctx.message(
                f"This project doesn't support computers of type {ctx.req.platform_name}", notice=True
            )
        # Sequence notices and the two-steps-ahead floor (docs/sequences.md), whatever the request asks.
        sequences_prepare(ctx, versions, work_need)
        with stage("dispatch"):
            _send_work(ctx, versions)
            host_app_versions_save(ctx)  # what reports and the daily roll-over changed, if nothing was sent
            transition_times_save(ctx)  # the reports' ones, if nothing was sent
            ctx.writes.flush()
        trickles_exchange(ctx)
        ctx.global_prefs_out = global_prefs_exchange(ctx)
        reply = reply_build(ctx, no_rsc_apps=_no_rsc_apps(ctx, versions))
    # Locality scheduling: wait for on-demand work after the commit, holding no transaction.
    reply = locality_retry_after_commit(ctx, reply)
    jobs_dispatched_count(project=project.slug, resources=(job.option.proc_type.value for job in ctx.sent))
    return reply


def _notice(text: str) -> ReplyMessage:
    return ReplyMessage(text=text, priority=MessagePriority.NOTICE)


def _send_work(ctx: RpcContext, versions: HostVersions) -> None:
    if ctx.req.dont_send_work:
        return
    need = work_need(ctx)
    if not ctx.req.work_request.wants_work:
        return
    if need.disallowed and not need.work_needed():
        ctx.message(
            "Your project preferences do not allow the requested processor types (GPUs disabled?).",
            notice=True,
        )
        return
    dispatcher = Dispatcher(ctx, versions, need, in_progress_limits(ctx, versions))
    # As BOINC: a reply that resends lost results carries no new work.
    if not lost_results_resend(dispatcher):
        if ctx.prefs.apps_selected:
            _send_selected_apps_work(ctx, dispatcher)
        else:
            _run_sources(dispatcher)
    dispatcher.flush()
    if not ctx.sent:
        _explain_no_work(ctx, versions, need)
    else:
        ctx.message(f"Sent {len(ctx.sent)} task(s).")


def _run_sources(dispatcher: Dispatcher) -> None:
    for source in WORK_SOURCES:
        if not dispatcher.need.work_needed():
            break
        source(dispatcher)


def _send_selected_apps_work(ctx: RpcContext, dispatcher: Dispatcher) -> None:
    """The volunteer chose applications: jobs of the others go only if they allow other
    apps and no job of a chosen app could be sent in this RPC (BOINC's second scan)."""
    versions = dispatcher.versions
    every_app = versions.options
    selected = set(ctx.prefs.apps_selected)
    versions.options = {app_id: opts if app_id in selected else [] for app_id, opts in every_app.items()}
    try:
        _run_sources(dispatcher)
    finally:
        versions.options = every_app
    if ctx.sent:
        return
    if ctx.prefs.allow_non_preferred_apps:
        _run_sources(dispatcher)
    else:
        ctx.no_work_reason(SELECTED_APPS_NO_WORK)


def _explain_no_work(ctx: RpcContext, versions: HostVersions, need: WorkNeed) -> None:
    if _platform_unsupported(ctx, versions):
        return  # the notice given for every request says why
    names = ", ".join(str(p.value) for p in need.needed_types()) or "any processor"
    reasons = list(ctx.no_work_reasons)
    for app_id in versions.quota_reached:
        reasons.append(f"This computer has reached its daily quota of tasks for {versions.apps[app_id]}")
    beta = beta_work_withheld(ctx)
    if beta:
        reasons.append(beta)
    if not any(versions.options.values()) and not beta:
        reasons.append("This project has no applications for this computer's platform and processors")
    elif not reasons:
        reasons.append(f"No tasks are available for {names}")
    ctx.message("No tasks sent: " + "; ".join(reasons) + ".", notice=False)


def _platform_unsupported(ctx: RpcContext, versions: HostVersions) -> bool:
    """No app version of the project is for any of the request's platforms (BOINC tells the
    user with a notice, whether or not work was asked for)."""
    return not ctx.req.is_anonymous_platform and not versions.resources_with_versions


def _no_rsc_apps(ctx: RpcContext, versions: HostVersions) -> tuple[ProcType, ...]:
    """Resources of this host for which the project has no versions (so the client stops asking)."""
    host_types = [ProcType.CPU, *[c.type for c in ctx.req.coprocs if c.count > 0]]
    missing = tuple(p for p in host_types if p not in versions.resources_with_versions)
    if len(missing) == len(host_types):
        return ()  # never all of them (the client would stop asking for good)
    return missing
