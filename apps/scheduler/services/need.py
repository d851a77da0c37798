"""The request's per-resource ask as the work-send policy's mutable state: the RPC
builds it, and so does the locality source's second pass after the commit."""

from __future__ import annotations

from apps.scheduler.domain.policy import ResourceNeed, WorkNeed, clamp_frac, max_jobs_per_rpc
from apps.scheduler.services.context import RpcContext
from apps.scheduler.services.hosts import host_instances


def work_need(ctx: RpcContext) -> WorkNeed:
    """The request's per-resource ask as the policy's mutable state."""
    req, account = ctx.req, ctx.account
    assert account is not None
    wr = req.work_request
    ts = req.time_stats
    instances = host_instances(ctx)  # effective counts (the volunteer's CPU share, capped)
    resources = {}
    for r in wr.resources:
        # The queue's estimated delay spreads over the instances the host really has (as
        # BOINC's update_estimated_delay): a 128-CPU host must not look twice as busy.
        coproc = req.coproc(r.proc_type)
        count = coproc.count if coproc else max(req.host_info.p_ncpus, 1)
        if r.proc_type.is_gpu:
            if instances.count(r.proc_type) <= 0:
                continue
            frac = clamp_frac(ts.gpu_active_frac * ts.on_frac)
        else:
            frac = clamp_frac(ts.active_frac * ts.on_frac)
        resources[r.proc_type] = ResourceNeed(
            proc_type=r.proc_type,
            req_secs=r.req_secs if wr.rsc_spec_request else wr.work_req_seconds,
            req_instances=r.req_instances,
            estimated_delay=r.estimated_delay,
            ninstances=count,
            available_frac=frac,
        )
    disallowed = {p for p in resources if ctx.prefs.refuses(p)}
    return WorkNeed(
        rsc_spec_request=wr.rsc_spec_request,
        seconds_to_fill=wr.work_req_seconds,
        resources=resources,
        max_jobs=max_jobs_per_rpc(
            ncpus=instances.ncpus,
            ngpus=instances.ngpus,
            gpu_multiplier=ctx.project.gpu_multiplier,
            max_wus_to_send=ctx.project.max_wus_to_send,
        ),
        disallowed=frozenset(disallowed),
    )
