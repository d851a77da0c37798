"""Tell the host about results it holds that the server cancelled or no longer needs."""

from __future__ import annotations

from apps.scheduler.services.context import RpcContext
from apps.work.domain.states import Outcome, ServerState
from apps.work.models import Result


def results_to_abort(ctx: RpcContext) -> None:
    """BOINC's send_result_abort, from the client's ``other_results`` list.

    * not in the database, or not this host's, or already over on the server
      (timed out, cancelled, not needed): ``result_abort``;
    * its workunit errored or was cancelled: ``result_abort``;
    * its workunit already has a canonical result: ``result_abort_if_not_started``.
    """
    others = ctx.req.other_results
    if not others:
        return
    host = ctx.host
    assert host is not None
    names = [o.name for o in others]
    rows = {
        r.name: r
        for r in Result.objects.filter(project=ctx.project, name__in=names)
        .select_related("workunit")
        .only(
            "name",
            "host_id",
            "server_state",
            "outcome",
            "workunit__error_mask",
            "workunit__canonical_result_id",
        )
    }
    for name in names:
        result = rows.get(name)
        if (
            result is None
            or result.host_id != host.id
            or (result.server_state == ServerState.OVER and result.outcome != Outcome.SUCCESS)
            or result.workunit.error_mask
        ):
            ctx.aborts.append(name)
        elif result.workunit.canonical_result_id and result.server_state == ServerState.IN_PROGRESS:
            ctx.aborts_if_not_started.append(name)
