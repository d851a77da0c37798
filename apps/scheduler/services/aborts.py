"""Tell the host about results it holds that the server cancelled or no longer needs."""

from __future__ import annotations

from apps.scheduler.queries import other_results_state
from apps.scheduler.services.context import RpcContext
from apps.work.domain.states import LATE_OUTCOMES, Outcome, ServerState


def results_to_abort(ctx: RpcContext) -> None:
    """BOINC's send_result_abort, from the client's ``other_results`` list.

    * not in the database, or not this host's, or already over on the server (cancelled,
      not needed, a sequence step relocated): ``result_abort``;
    * its workunit errored or was cancelled: ``result_abort``;
    * timed out on the server, or its workunit already has a canonical result:
      ``result_abort_if_not_started`` (a late task already running may still report, and
      its report is kept: reports.result_open_to_its_host).
    """
    others = ctx.req.other_results
    if not others:
        return
    host = ctx.host
    assert host is not None
    names = [o.name for o in others]
    rows = other_results_state(ctx.project.id, names)
    for name in names:
        row = rows.get(name)
        if row is None:
            ctx.aborts.append(name)
            continue
        host_id, server_state, outcome, error_mask, canonical_result_id, sequence_id = row
        late = server_state == ServerState.OVER and outcome in LATE_OUTCOMES and sequence_id is None
        if host_id != host.id or error_mask:
            ctx.aborts.append(name)
        elif late:
            ctx.aborts_if_not_started.append(name)
        elif server_state == ServerState.OVER and outcome != Outcome.SUCCESS:
            ctx.aborts.append(name)
        elif canonical_result_id and server_state == ServerState.IN_PROGRESS:
            ctx.aborts_if_not_started.append(name)
